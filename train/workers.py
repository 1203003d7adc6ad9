"""How many training workers, and which examples of a global batch each one trains.

`train.num_workers` is the one setting: an integer N (N Ray Train workers, 0 = Ray Train's local mode) or a
pair [min, max] (elastic: Ray Train's ``ScalingConfig(num_workers=(min, max))`` starts with as many workers as
the cluster has room for, up to max, goes on with fewer, down to min, when a node is lost, and grows back when
one returns; every change of size restarts the group from the latest checkpoint).

The result does not depend on the number of workers: every worker cuts the same global token-budget batches
from the whole of each task's data (train/data.py), and at each step takes its `share` of the global batch
(rows rank, rank + world, ... of the batch, which is sorted by length, so the shares are of similar size).
Each worker's loss is the token-weighted sum over its share divided by the global answer-token count, and the
gradients are summed over the workers (train/distributed.py): the update is the one-worker update up to the
order of the float additions.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def worker_range(num_workers: int | list[int] | tuple[int, int]) -> tuple[int, int]:
    """(min, max) workers of a `train.num_workers` value: N is (N, N)."""
    if isinstance(num_workers, (list, tuple)):
        low, high = num_workers
        return int(low), int(high)
    return int(num_workers), int(num_workers)


def is_elastic(params: Any) -> bool:
    """Whether `params` train elastically (train.num_workers: [min, max])."""
    return isinstance(params.train.num_workers, (list, tuple))


def describe(num_workers: int | list[int]) -> str:
    """'2', or '1-2' for an elastic range (MLflow's `workers` tag, `--workers`)."""
    low, high = worker_range(num_workers)
    return str(low) if not isinstance(num_workers, (list, tuple)) else f"{low}-{high}"


def parse_workers(text: str) -> int | list[int]:
    """`--workers N` or `--workers MIN-MAX` as a train.num_workers value; ValueError for anything else."""
    low, sep, high = text.partition("-")
    try:
        if not sep:
            return int(low)
        if not low:  # "-2": a (negative) number, refused by the check with the others
            return int(text)
        return [int(low), int(high)]
    except ValueError:
        raise ValueError(f"--workers {text}: expected N or MIN-MAX (e.g. 2 or 1-2)") from None


def share(batch: np.ndarray, rank: int, world: int) -> np.ndarray:
    """The rows of a global batch (example indices) that worker `rank` of `world` trains: every world-th,
    from its rank (possibly none, when the batch has fewer examples than there are workers)."""
    return batch[rank::world]
