"""mqan/cpu_routes.py: the cheaper CPU dropout mask has nn.Dropout's distribution (each element dropped with
probability p, independently), its scaling and its gradient; W_v's gradient-free fp32 products on a oneDNN-packed
copy equal nn.Linear's to rounding and follow every change of W_v and b; both fall back to PyTorch where they do
not apply."""
import math

import pytest
import torch
from torch.nn import functional as F

from mqan import cpu_routes
from mqan.cpu_routes import Dropout, VocabProjection, keep_mask, dropout


@pytest.fixture(autouse=True)
def not_intel(monkeypatch):
    monkeypatch.setattr(cpu_routes, "intel_cpu", lambda: False)  # W_v's route on any CPU


@pytest.mark.parametrize("p", [0.05, 0.2, 0.5, 0.9])
def test_each_element_is_dropped_with_probability_p_independently(p):
    torch.manual_seed(0)
    n = 400_001  # odd: the last 64-bit draw is half used
    drop = (~keep_mask((n,), p)).double()
    sd = math.sqrt(p * (1 - p) / n)
    assert abs(drop.mean().item() - p) < 5 * sd
    # neighbours (the two halves of one 64-bit draw, and across draws) and elements 8 apart: P(both) = p^2
    for lag in (1, 2, 8):
        both = (drop[:-lag] * drop[lag:]).mean().item()
        assert abs(both - p * p) < 5 * math.sqrt(p * p * (1 - p * p) / n), lag


def test_the_extreme_probabilities_drop_nothing_or_everything():
    assert keep_mask((1000,), 1e-12).all()
    assert not keep_mask((1000,), 1 - 1e-12).any()


def test_kept_elements_are_scaled_as_nn_dropout_scales_them_and_the_rest_are_zero():
    torch.manual_seed(1)
    x = torch.randn(7, 5, 33)
    out = dropout(x, 0.2, True)
    kept = out != 0
    assert 0.7 < kept.float().mean() < 0.9
    assert torch.equal(out[kept], x[kept] * (1 / (1 - 0.2)))
    torch.manual_seed(1)
    reference = F.dropout(x, 0.2, True)  # another random stream: the same values where both keep an element
    both = kept & (reference != 0)
    assert torch.equal(out[both], reference[both])


def test_the_gradient_is_the_mask_times_the_scale():
    x = torch.randn(6, 9, dtype=torch.float64, requires_grad=True)

    def fn(t):
        torch.manual_seed(3)  # the same mask at every evaluation
        return dropout(t, 0.3, True)

    assert torch.autograd.gradcheck(fn, (x,))
    g = torch.randn(6, 9, dtype=torch.float64)
    out = fn(x)
    (dx,) = torch.autograd.grad(out, x, g)
    assert torch.equal(dx, torch.where(out != 0, g * (1 / 0.7), 0.0))


def test_the_same_seed_gives_the_same_masks():
    x = torch.ones(1000)
    torch.manual_seed(5)
    a = dropout(x, 0.5, True)
    torch.manual_seed(5)
    assert torch.equal(a, dropout(x, 0.5, True))
    assert not torch.equal(a, dropout(x, 0.5, True))


def test_eval_mode_takes_f_dropout_and_intel_cpus_take_the_route_too(monkeypatch):
    module = Dropout(0.4)
    assert isinstance(module, torch.nn.Dropout) and module.p == 0.4 and not module.state_dict()
    x = torch.randn(50, 20)
    assert torch.equal(module.eval()(x), x)
    monkeypatch.setattr(cpu_routes, "intel_cpu", lambda: True)  # measured faster there too (module docstring)
    torch.manual_seed(2)
    expected = cpu_routes._Dropout.apply(x, 0.4)
    torch.manual_seed(2)
    assert torch.equal(module.train()(x), expected)
    torch.manual_seed(2)
    assert not torch.equal(module(x), F.dropout(x, 0.4, True))  # another random stream than bernoulli_'s


@pytest.mark.parametrize("masked", [True, False])
def test_attention_written_out_is_sdpas_math_and_drops_weights_with_probability_p(monkeypatch, masked):
    torch.manual_seed(4)
    q, k, v = (torch.randn(2, 3, 5 if i == 0 else 7, 4, dtype=torch.float64, requires_grad=True) for i in range(3))
    mask = (torch.rand(2, 1, 5, 7) < 0.7) | (torch.arange(7) == 0) if masked else None  # no row wholly masked
    g = torch.randn(2, 3, 5, 4, dtype=torch.float64)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    ref_grads = torch.autograd.grad(ref, (q, k, v), g)
    monkeypatch.setattr(cpu_routes, "dropout", lambda x, p, training: x)  # the weights undropped: SDPA's values
    out = cpu_routes.attention(q, k, v, mask, 0.3)
    assert torch.allclose(out, ref, rtol=0, atol=1e-13)
    grads = torch.autograd.grad(out, (q, k, v), g)
    assert all(torch.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(grads, ref_grads))
    seen = []
    monkeypatch.setattr(cpu_routes, "dropout", lambda x, p, training: seen.append((x.shape, p, training)) or x * 0)
    assert not cpu_routes.attention(q, k, v, mask, 0.3).any()  # every weight dropped: the output is 0
    assert seen == [((2, 3, 5, 7), 0.3, True)]


ONEDNN = pytest.mark.skipif(not (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_linear_pointwise")),
                            reason="no oneDNN packed matmul in this PyTorch build")


@ONEDNN
def test_the_packed_product_is_nn_linears_to_rounding_and_follows_changes_of_w_and_b():
    torch.manual_seed(0)
    layer = VocabProjection(20, 300).eval()
    x = torch.randn(7, 20)
    with torch.no_grad():
        assert torch.allclose(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5)
        first = layer.packed_weight()
        assert layer.packed_weight() is first  # made once
        layer.weight.mul_(2)
        layer.bias.add_(1)
        assert torch.allclose(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5)
        assert layer.packed_weight() is not first
    with torch.inference_mode():
        assert torch.allclose(layer(x), F.linear(x, layer.weight, layer.bias), atol=1e-5)


@ONEDNN
def test_training_gradients_and_other_dtypes_take_nn_linears_forward():
    torch.manual_seed(1)
    layer = VocabProjection(6, 11)
    x = torch.randn(3, 6)
    out = layer(x)  # training mode, gradients on
    assert torch.equal(out, F.linear(x, layer.weight, layer.bias)) and out.requires_grad
    layer.eval()
    with torch.no_grad():
        layer(x)
    assert layer._packed is not None
    layer.train()
    assert layer._packed is None  # training drops the packed copy
    double = VocabProjection(6, 11).double().eval()
    with torch.no_grad():
        xd = torch.randn(3, 6, dtype=torch.float64)
        assert torch.equal(double(xd), F.linear(xd, double.weight, double.bias))
    assert set(layer.state_dict()) == {"weight", "bias"} and isinstance(layer, torch.nn.Linear)


@ONEDNN
def test_greedy_decoding_chooses_the_same_tokens_through_the_packed_projection(monkeypatch):
    from mqan.batch import collate
    from tests.mqan.test_model import VOCAB, random_rows, tiny_model

    model = tiny_model("mqan").eval()
    b = collate(random_rows(6, seed=3), VOCAB)
    packed_out = model.greedy(b, max_len=6)
    assert model.out._packed is not None
    monkeypatch.setattr(cpu_routes, "intel_cpu", lambda: True)  # nn.Linear's product
    plain = model.greedy(b, max_len=6)
    assert torch.equal(packed_out.ids, plain.ids)
    assert torch.allclose(packed_out.log_probs, plain.log_probs, atol=1e-5)
