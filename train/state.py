"""Resumable training state: a directory that Ray Train registers as a checkpoint.

It holds ``state.pt`` (rank 0: model, optimizer, scheduler, weight average, iteration, schedule position,
best score, vocabulary and vector fingerprints) and ``rank<r>.pt`` per worker (its data-order and RNG
states). Only tensors, numbers, strings and containers go in: no project class is pickled, so a state
written before code moves keeps loading (tests/train/test_state.py checks the pickles).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from deca.errors import DataError

STATE_FILE = "state.pt"


def save_training_state(directory: str | Path, rank: int, worker_state: dict[str, Any],
                        state: dict[str, Any] | None = None) -> None:
    """Write this worker's `worker_state` (and, on rank 0, the shared `state`) into a checkpoint directory."""
    directory = Path(directory)
    if state is not None:
        torch.save(state, directory / STATE_FILE)
    torch.save(worker_state, directory / f"rank{rank}.pt")


def load_training_state(directory: str | Path, rank: int, map_location="cpu") -> tuple[dict, dict]:
    """(shared state, this worker's state) of a checkpoint directory written by `save_training_state`."""
    directory = Path(directory)
    state = torch.load(directory / STATE_FILE, map_location=map_location, weights_only=False)
    mine = directory / f"rank{rank}.pt"
    if not mine.exists():
        n = state["world_size"]
        raise DataError(directory, f"no state for worker {rank}: the checkpoint was written by {n} workers",
                        fix=f"resume with train.num_workers={n}")
    return state, torch.load(mine, map_location="cpu", weights_only=False)
