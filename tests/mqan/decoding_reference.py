"""Reference outputs of every decoding path in float64, recorded before the one decoding step (issue: one decode
step) replaced the greedy loop's and the static loop's own copies of it.

    .venv/bin/python -m tests.mqan.decoding_reference    # (re)writes tests/fixtures/decoding_reference.pt

`test_decoding_reference.py` recomputes them with the current code: in float64 a refactoring of the decoder must
give the same ids and the same numbers (to 1e-12; bit for bit on the machine that recorded them). Only rewrite
the file for a deliberate change of the model.
"""
from __future__ import annotations

from pathlib import Path

import torch

from tests.mqan.test_model import ALL, VOCAB, random_rows, tiny_model
from mqan.batch import collate
from mqan.vocab import EOS_ID

PATH = Path(__file__).resolve().parents[1] / "fixtures" / "decoding_reference.pt"
CASES = ((0, 0.0), (1, 0.0), (1, 2.0), (2, 2.0), (0, 3.0))  # (seed, added to the <eos> logit: answers end early)
FIELDS = ("ids", "log_probs", "source_weights", "lengths", "contributions")


def _greedy(prefix: str, out) -> dict[str, torch.Tensor]:
    return {f"{prefix}.{f}": getattr(out, f) for f in FIELDS if getattr(out, f) is not None}


def _drain(gen):
    while True:
        try:
            next(gen)
        except StopIteration as done:
            return done.value


def outputs(variant: str, seed: int, eos_bias: float) -> dict[str, torch.Tensor]:
    """Teacher forcing and greedy decoding (incremental, recomputed prefix, explained, static, the steps
    generator) of a float64 tiny model, dropout off."""
    model = tiny_model(variant, seed=seed, dropout=0.0).double()
    model.embed.double()
    model.eval()
    with torch.no_grad():
        model.out.bias[EOS_ID] += eos_bias
    batch = collate(random_rows(7, seed=10 + seed), VOCAB)
    with torch.no_grad():
        out = {"loss": model(batch), "token_log_probs": model.token_log_probs(batch),
               "distributions": model.distributions(batch)}
    out.update(_greedy("greedy", model.greedy(batch, max_len=6)))
    out.update(_greedy("recomputed", model.greedy(batch, max_len=6, incremental=False)))
    out.update(_greedy("explained", model.greedy(batch, max_len=6, explain=True)))
    out.update(_greedy("static", model.greedy(batch, max_len=6, cuda_graphs=True)))
    with torch.no_grad():
        out.update(_greedy("steps", _drain(model.greedy_steps(batch, max_len=6, explain=True))))
    return out


def main() -> None:
    torch.set_num_threads(1)
    torch.save({f"{v}/{s}/{e}": outputs(v, s, e) for v in ALL for s, e in CASES}, PATH)
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
