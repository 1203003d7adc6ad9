"""vocab_log_prob equals -cross_entropy(linear(x, W, b), y): values and gradients of x, W and b."""
import pytest
import torch
import torch.nn.functional as F

from mqan import vocab_log_prob as module
from mqan.vocab_log_prob import vocab_log_prob


def _inputs(n: int, d: int, v: int, bias: bool = True, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(v, d, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(v, generator=g, dtype=torch.float64, requires_grad=True) if bias else None
    y = torch.randint(0, v, (n,), generator=g)
    return x, w, b, y


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rows", [4, 256])  # blocks of the normalizer: several, or one
def test_values_and_gradients_equal_cross_entropy(monkeypatch, bias, rows):
    monkeypatch.setattr(module, "ROWS", rows)
    x, w, b, y = _inputs(13, 5, 31, bias)
    upstream = torch.randn(13, dtype=torch.float64)
    have = vocab_log_prob(x, w, b, y)
    grads = torch.autograd.grad((have * upstream).sum(), [t for t in (x, w, b) if t is not None])
    want = -F.cross_entropy(F.linear(x, w, b), y, reduction="none")
    expected = torch.autograd.grad((want * upstream).sum(), [t for t in (x, w, b) if t is not None])
    torch.testing.assert_close(have, want)
    for g, e in zip(grads, expected):
        torch.testing.assert_close(g, e)


def test_without_gradients_it_is_the_same_value():
    x, w, b, y = _inputs(9, 4, 11)
    with torch.no_grad():
        have = vocab_log_prob(x, w, b, y)
    torch.testing.assert_close(have, -F.cross_entropy(F.linear(x, w, b), y, reduction="none").detach())


def test_only_the_inputs_that_need_a_gradient_get_one():
    x, w, b, y = _inputs(5, 3, 6)
    frozen = w.detach()
    vocab_log_prob(x, frozen, b, y).sum().backward()
    assert x.grad is not None and b.grad is not None and frozen.grad is None


def test_empty_rows():
    x, w, b, y = _inputs(0, 3, 6)
    out = vocab_log_prob(x, w, b, y)
    assert out.shape == (0,)
    out.sum().backward()
    assert torch.count_nonzero(w.grad) == 0


def test_a_second_backward_through_the_same_graph_is_refused():
    x, w, b, y = _inputs(4, 3, 6)
    loss = vocab_log_prob(x, w, b, y).sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="retain_graph"):
        loss.backward()
