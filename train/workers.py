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
order of the float additions. That is exact with model.dropout and model.word_dropout 0. With dropout, each
worker draws its masks from its own generator (seeded with the seed and its rank, and the iteration when it
joins a group from a checkpoint), so runs on different numbers of workers are equal in distribution only.

Before a run starts, `check_room` refuses one the cluster has no room for (an elastic run: for its min);
while an elastic run waits, `MinWorkersWatch` ends it when the cluster has had no room for its min for too long.

What only places the work (these train.* keys) does not change the model: a run interrupted under one value
continues under another (train/resume.py).
"""
from __future__ import annotations

import time
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from deca.errors import ConfigError

PLACEMENT_KEYS = ("num_workers", "resize_every_s", "cpus_per_worker", "placement_strategy", "max_failures")
PATIENCE_MONITOR_INTERVALS = 5  # an elastic run below its min for this many resize intervals is ended


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


def room_for(nodes: Sequence[Mapping[str, Any]], per_worker: Mapping[str, float]) -> int:
    """How many workers, each needing `per_worker` resources on one node, fit on the alive nodes of
    `ray.nodes()`."""
    needs = {r: a for r, a in per_worker.items() if a > 0}
    total = 0
    for node in nodes:
        if node.get("Alive") and needs:
            total += int(min((node["Resources"].get(r, 0.0) + 1e-9) // a for r, a in needs.items()))
    return total


class MinWorkersWatch:
    """Ray Train waits without end while the cluster has no room for an elastic run's `min` workers (its
    ElasticScalingPolicy only logs it). Called from the driver's wait loop: once the alive nodes have had room
    for fewer than `low` workers for `patience_s`, it raises a ConfigError saying so, which ends the run (its
    checkpoints kept for `--resume`)."""

    def __init__(self, low: int, per_worker: Mapping[str, float], patience_s: float,
                 nodes: Callable[[], Sequence[Mapping[str, Any]]], every_s: float = 2.0,
                 clock: Callable[[], float] = time.monotonic):
        self.low, self.per_worker, self.patience_s = low, dict(per_worker), patience_s
        self.nodes, self.every_s, self.clock = nodes, every_s, clock
        self.last, self.short_since = float("-inf"), None

    def __call__(self) -> None:
        now = self.clock()
        if now - self.last < self.every_s:
            return
        self.last = now
        room = room_for(self.nodes(), self.per_worker)
        if room >= self.low:
            self.short_since = None
            return
        self.short_since = now if self.short_since is None else self.short_since
        if now - self.short_since >= self.patience_s:
            raise ConfigError(f"train.num_workers: the cluster has had room for {room} worker(s), fewer than the "
                              f"minimum {self.low}, for {now - self.short_since:.0f} s; add nodes or lower the "
                              f"minimum, then continue with `deca train --resume`")


def check_room(params: Any, have: Mapping[str, float], nodes: Sequence[Mapping[str, Any]]) -> None:
    """Asking for more than the cluster has makes Ray Train wait silently: say so instead (an elastic run:
    when the cluster has no room for its `min` workers). `have`: ray.cluster_resources(); `nodes`: ray.nodes()."""
    tc = params.train
    low, _ = worker_range(tc.num_workers)
    what = f"train.num_workers={tc.num_workers}" + (f" needs at least {low} workers: it" if is_elastic(params) else "")
    need = {"CPU": low * tc.cpus_per_worker}
    if tc.use_gpu:
        need["GPU"] = low * tc.gpus_per_worker
    for res, amount in need.items():
        if have.get(res, 0) + 1e-9 < amount:
            raise ConfigError(f"{what} needs {amount:g} {res} but Ray has "
                              f"{have.get(res, 0):g}; lower train.num_workers or train.cpus_per_worker "
                              f"(fractions such as 0.5 are allowed)")
    if tc.placement_strategy == "STRICT_SPREAD":
        per_worker = {res: amount / low for res, amount in need.items()}
        fit = [n for n in nodes
               if n.get("Alive") and all(n["Resources"].get(r, 0) + 1e-9 >= a for r, a in per_worker.items())]
        if len(fit) < low:
            raise ConfigError(f"train.placement_strategy=STRICT_SPREAD puts each of the {low} workers on "
                              f"its own node, but only {len(fit)} node(s) have room for one; add nodes, or use "
                              f"SPREAD or PACK")


def min_workers_watch(params: Any, nodes: Callable[[], Sequence[Mapping[str, Any]]]) -> MinWorkersWatch:
    """The bound on an elastic run's wait for its `min` workers (PATIENCE_MONITOR_INTERVALS resize intervals);
    `nodes`: ray.nodes."""
    tc = params.train
    per_worker = {"CPU": tc.cpus_per_worker, **({"GPU": tc.gpus_per_worker} if tc.use_gpu else {})}
    return MinWorkersWatch(worker_range(tc.num_workers)[0], per_worker,
                           PATIENCE_MONITOR_INTERVALS * tc.resize_every_s, nodes)
