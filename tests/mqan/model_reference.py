"""Reference outputs of the tiny MQAN variants, recorded before the speed work of issue 16.

    .venv/bin/python -m tests.mqan.model_reference    # (re)writes tests/fixtures/mqan_reference.pt

`test_model_reference.py` recomputes the same quantities with the current code and compares them within
floating-point tolerance: an optimization may change how the paper's computation is done, never what it
computes. Only rewrite the file for a deliberate change of the model.
"""
from __future__ import annotations

from pathlib import Path

import torch

from tests.support import VOCAB, tiny_model
from tests.mqan.test_model import ALL, random_rows
from mqan.batch import collate

PATH = Path(__file__).resolve().parents[1] / "fixtures" / "mqan_reference.pt"


def outputs(variant: str) -> dict[str, torch.Tensor]:
    """Loss, gradients, teacher-forced log-probs and distributions, greedy outputs (dropout off)."""
    torch.manual_seed(0)
    model = tiny_model(variant, seed=1, dropout=0.3)
    model.eval()  # deterministic: no dropout masks, so any change of the order of random draws is irrelevant
    batch = collate(random_rows(7, seed=3), VOCAB)
    loss = model(batch)
    loss.backward()
    out = {"loss": loss.detach(), "token_log_probs": model.token_log_probs(batch).detach(),
           "distributions": model.distributions(batch).detach()}
    out.update({f"grad.{name}": p.grad.detach().clone() for name, p in model.named_parameters() if p.grad is not None})
    greedy = model.greedy(batch, max_len=5)
    out.update({"greedy.ids": greedy.ids, "greedy.log_probs": greedy.log_probs,
                "greedy.source_weights": greedy.source_weights, "greedy.lengths": greedy.lengths})
    return out


def main() -> None:
    torch.set_num_threads(1)
    torch.save({v: outputs(v) for v in ALL}, PATH)
    print(f"wrote {PATH}")


if __name__ == "__main__":
    main()
