"""Recipe hooks used by the tests (train/recipe.py calls each with the recipe after every step).

Ray pickles them into the workers by value (`by_value`), so the workers need not import this module.
"""
from __future__ import annotations

import os
import time
from pathlib import Path


class KillOnce:
    """The last worker exits hard (no cleanup) right after `iteration`, once per run (`marker` records it)."""

    def __init__(self, iteration: int, marker: str | Path):
        self.iteration, self.marker = iteration, str(marker)

    def __call__(self, recipe) -> None:
        dist = recipe.dist
        if recipe.iteration != self.iteration or dist.rank != dist.world - 1 or os.path.exists(self.marker):
            return
        Path(self.marker).write_text(f"worker {dist.rank} killed at iteration {recipe.iteration}\n")
        # Ray Train's controller registers reported checkpoints when it polls the workers (every
        # RAY_TRAIN_HEALTH_CHECK_INTERVAL_S, 2 s): wait that long so that the last checkpoint counts,
        # as it would in a real run where checkpoints are minutes apart.
        time.sleep(float(os.environ.get("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", 2.0)) + 1.0)
        os._exit(1)


class PauseOnce:
    """The last worker of a group of `world` writes `marker` right after `iteration` and waits there (at most
    `seconds`) while the test changes the cluster under it: kills a node, or adds one. Once per run."""

    def __init__(self, iteration: int, world: int, marker: str | Path, seconds: float = 60.0):
        self.iteration, self.world, self.marker, self.seconds = iteration, world, str(marker), seconds

    def __call__(self, recipe) -> None:
        dist = recipe.dist
        if recipe.iteration != self.iteration or dist.world != self.world or dist.rank != dist.world - 1 \
                or os.path.exists(self.marker):
            return
        Path(self.marker).write_text(f"worker {dist.rank} of {dist.world} paused at iteration {recipe.iteration}\n")
        time.sleep(self.seconds)


class LogWorld:
    """Rank 0 appends "<iteration> <workers>" to `path` after every step (a replayed step appends again)."""

    def __init__(self, path: str | Path):
        self.path = str(path)

    def __call__(self, recipe) -> None:
        if recipe.dist.rank == 0:
            with open(self.path, "a", encoding="utf-8") as out:
                out.write(f"{recipe.iteration} {recipe.dist.world}\n")


def by_value() -> None:
    """Make Ray's pickler send this module's classes by value."""
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
