"""Resumable training state: a directory that Ray Train registers as a checkpoint.

It holds ``state.pt`` (rank 0: model, optimizer, scheduler, weight average, iteration, schedule position,
best score, vocabulary and vector fingerprints) and ``rank<r>.pt`` per worker (its data-order and RNG
states). Only tensors, numbers, strings and containers go in: no project class is pickled, so a state
written before code moves keeps loading (tests/train/test_state.py checks the pickles). Both files load with
``torch.load(weights_only=True)``: a file that would run code (a planted pickle) is refused, naming it. States
written before the NumPy RNG state was stored as a tensor hold NumPy arrays, which are allowed (and only those).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch
from numpy import dtypes

from deca.errors import DataError, load_refusal
from mqan.checkpoint import torch_save

STATE_FILE = "state.pt"


def save_training_state(directory: str | Path, rank: int, worker_state: dict[str, Any],
                        state: dict[str, Any] | None = None) -> None:
    """Write this worker's `worker_state` (and, on rank 0, the shared `state`) into a checkpoint directory (a full
    disk: a WriteError naming the file)."""
    directory = Path(directory)
    if state is not None:
        torch_save(state, directory / STATE_FILE)
    torch_save(worker_state, directory / f"rank{rank}.pt")


def load_training_state(directory: str | Path, rank: int, map_location="cpu") -> tuple[dict, dict]:
    """(shared state, this worker's state) of a checkpoint directory written by `save_training_state`, on any
    number of workers: a worker the checkpoint has no file for (it was written by fewer) gets rank 0's data
    state (the data position is the same on every worker) and no RNG state (``"rng": None``)."""
    directory = Path(directory)
    state = _load(directory / STATE_FILE, map_location)
    mine = directory / f"rank{rank}.pt"
    if not mine.exists():
        return state, {"data": _load(directory / "rank0.pt", "cpu")["data"], "rng": None}
    return state, _load(mine, "cpu")


def _legacy_numpy_globals() -> list:
    """What a NumPy RNG state pickled by earlier states refers to: arrays and their dtypes, nothing callable."""
    return [np._core.multiarray._reconstruct, np.ndarray, np.dtype, dtypes.UInt32DType]


def _load(path: Path, map_location) -> dict:
    """One state file, loaded weights-only; a DataError (one line and a fix) for anything that is not one."""
    if not path.is_file():
        raise DataError(path, "training state missing", fix="resume from another checkpoint, or train from scratch")
    try:
        with torch.serialization.safe_globals(_legacy_numpy_globals()):
            state = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # a pickle that would import code, a truncated archive, ...
        raise DataError(path, f"not a training state written by deca train; {load_refusal(exc)}",
                        fix="delete this checkpoint folder and resume from another one, or train from scratch") from None
    if not isinstance(state, dict):
        raise DataError(path, "not a training state written by deca train",
                        fix="delete this checkpoint folder and resume from another one, or train from scratch")
    return state
