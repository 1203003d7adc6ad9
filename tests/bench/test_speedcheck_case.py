"""bench/speedcheck_case.py, the project's side of ../shared/speedcheck: the contract its README states (the
options, what `fn(rows)` returns, EOS suppressed for exactly `decode_steps`), on a tiny vocabulary; and
bench/model.py's FLOP count for the MFU column."""
from __future__ import annotations

import pytest
import torch

from bench import speedcheck_case as case
from mqan.batch import collate
from mqan.vocab import Vocab

WORDS = ["the", "film", "is", "good", "bad", "what", "?", "positive", "negative", "a", "plot", "."]
ROWS = [{"context_tokens": ["the ", "film ", "is ", "good"], "question_tokens": ["what ", "?"],
         "answer_tokens": ["positive"]},
        {"context_tokens": ["a ", "bad ", "plot", "."], "question_tokens": ["what ", "?"],
         "answer_tokens": ["negative"]}]


def itos() -> list[str]:
    return Vocab.from_tokens(WORDS, 50).itos


def make(mode: str, **options):
    opts = {k: str(v) for k, v in options.items()}
    return case.speedcheck_case(mode, itos=itos(), generative=len(itos()), seed=0, decode_steps=4, head_dim=None,
                                default_malloc=True, options=opts)


@pytest.mark.parametrize("options", [{}, {"recompute_encoder": 1}, {"precision": "bf16"}])
def test_a_training_step_returns_seconds_examples_and_a_finite_loss(options):
    info, step = make("train", **options)
    assert info["trainable_params"] > 0 and info["recompute_encoder"] == ("recompute_encoder" in options)
    seconds, examples, loss = step(ROWS)
    assert seconds > 0 and examples == 2 and torch.isfinite(torch.tensor(loss))


def test_the_harness_adam_is_training_s_fused_adam_with_the_harness_update():
    """Every bench's training step takes the optimizer training builds (fused on the CPU), whose update is the
    harness's per-tensor Adam (lr 1e-4, betas (0.9, 0.98), eps 1e-9) up to float rounding."""
    torch.manual_seed(0)
    fused, plain = torch.nn.Linear(6, 3), torch.nn.Linear(6, 3)
    plain.load_state_dict(fused.state_dict())
    ours = case.harness_optimizer(fused)
    theirs = torch.optim.Adam(plain.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    assert ours.defaults["fused"] and ours.defaults["betas"] == (0.9, 0.98) and ours.defaults["eps"] == 1e-9
    x = torch.randn(5, 6)
    for _ in range(3):
        for model, opt in ((fused, ours), (plain, theirs)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
    for a, b in zip(fused.parameters(), plain.parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_decoding_runs_exactly_the_forced_steps(precision):
    info, decode = make("decode", precision=precision)
    assert info["precision"] == precision
    seconds, examples, steps = decode(ROWS)
    assert seconds > 0 and examples == 2 and steps == 4


@pytest.mark.parametrize("options, message", [
    ({"compile": 1}, "unknown --proj-opt compile"),
    ({"recompute_encoder": "yes"}, "choose 0 or 1"),
    ({"precision": "fp8"}, "fp8"),
])
def test_bad_options_name_the_option(options, message):
    with pytest.raises(SystemExit, match=message):
        make("train", **options)


def test_int8_is_refused_for_training():
    with pytest.raises(SystemExit, match="int8"):
        make("train", precision="int8")


def test_step_flops_counts_the_forward_and_backward_products():
    from bench.model import step_flops

    model, vocab = case.build(itos(), len(itos()), 0, None)
    flops = step_flops(model, collate(ROWS, vocab), "fp32")
    assert flops > 1e6  # matrix products of a d = 200 model over 2 examples
    assert all(p.grad is None for p in model.parameters())  # the count leaves no gradients behind
