"""Shards of a split as units of work for `deca prepare`, and their spread over the workers.

A `Unit` is one shard of a split, as a range of reader positions; `example_cost` estimates its work,
`assign_bins` / `BalanceUnits` spread the units over the workers by that cost, and `passes` / `read_ranges`
turn a worker's units into one read of each split. Nothing here reads Parquet or writes files: the
DoFns that do are in `pipelines.transforms`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, NamedTuple, Sequence

from pipelines import beam_options  # first: quiets Beam's import-time warning

import apache_beam as beam  # noqa: E402

from deca.registry import Dropped, Example, Task

READ_COST = 20  # reading one raw record, in the units of `example_cost` (about 20 characters tokenized)


class Unit(NamedTuple):
    """One shard of a split: the reader positions it holds, and the work it is expected to take."""

    task: str
    split: str
    shard: int
    start: int  # reader positions range(start, stop, step): examples and reader drops alike
    stop: int
    step: int
    cost: int  # see `transforms.PlanSplit.units`

    @property
    def positions(self) -> range:
        return range(self.start, self.stop, self.step)


def shard_of(seq: int, rows_per_shard: int, num_shards: int) -> int:
    """Contiguous runs of `rows_per_shard` reader positions per shard, or round-robin over exactly
    `num_shards` shards when that is set."""
    return seq % num_shards if num_shards > 0 else seq // rows_per_shard


def example_cost(ex: Example, previous: Example | None) -> int:
    """Roughly the work of converting `ex` after `previous`: the characters revtok tokenizes (a text
    equal to the previous example's is a `rows.TextCache` hit) plus a fixed per-example cost."""
    return 50 + sum(len(getattr(ex, f)) for f in ("context", "question", "answer")
                    if previous is None or getattr(previous, f) != getattr(ex, f))


def assign_bins(units: Iterable[Unit], bins: int) -> Iterator[tuple[int, Unit]]:
    """(bin, unit) pairs: the costliest unit first, each to the least loaded of `bins` bins (longest
    processing time first); ``bins <= 0``: one bin per unit. Depends only on the units and `bins`."""
    ordered = sorted(units, key=lambda u: (-u.cost, u.task, u.split, u.shard))
    if bins <= 0:
        yield from enumerate(ordered)
        return
    load = [0] * bins
    for unit in ordered:
        b = min(range(bins), key=lambda k: (load[k], k))
        load[b] += unit.cost
        yield b, unit


class Gather(beam.PTransform):
    """A (small) PCollection -> one element: the list of all its elements (none if it is empty).
    One GroupByKey, where `beam.combiners.ToList` takes three stages."""

    def expand(self, pcoll):
        return (pcoll
                | "OneKey" >> beam.Map(lambda x: (None, x))
                | "Group" >> beam.GroupByKey()
                | "Values" >> beam.Map(lambda kv: list(kv[1])))


class BalanceUnits(beam.PTransform):
    """Units -> the same units, spread over `bins` groups of about equal cost (`assign_bins`), each group as
    its reads of the splits (`passes`: tuples of units).

    The local runner hands the groups of a GroupByKey to its workers in turn, in the order their keys
    were first seen; with one bin per worker, each worker gets one bin. On any runner this only moves
    whole units around, so the output files never depend on it.
    """

    def __init__(self, bins: int):
        super().__init__()
        self.bins = bins

    def expand(self, units):
        bins = self.bins
        return (units
                | "Gather" >> Gather()
                | "Assign" >> beam.FlatMap(assign_bins, bins)
                | "GroupBins" >> beam.GroupByKey()
                | "Passes" >> beam.FlatMap(lambda kv: passes(kv[1])))


def read_ranges(task: Task, units: Sequence[Unit], paths: Sequence[Path],
                options: Any) -> Iterator[tuple[int, int, Example]]:
    """(index in `units`, reader position, example) for the positions of `units`, in one read of their split:
    one unit, or contiguous ranges in reader order (see `passes`). Stops reading after the last position."""
    stop, k = max(u.stop for u in units), 0
    for seq, item in enumerate(task.read(units[0].split, paths, options)):
        if seq >= stop:
            return
        while seq >= units[k].stop:
            k += 1
        if seq in units[k].positions and not isinstance(item, Dropped):
            yield k, seq, item


def passes(units: Iterable[Unit]) -> Iterator[tuple[Unit, ...]]:
    """A bin's units as reads of their splits: one split's contiguous ranges together, in reader order (a split
    is read once per bin, not once per shard: time linear in its size); a round-robin unit alone."""
    reads: dict[tuple[str, str, int], list[Unit]] = {}
    for unit in units:  # a round-robin unit (num_shards) holds positions of the whole split: a read of its own
        reads.setdefault((unit.task, unit.split, -1 if unit.step == 1 else unit.shard), []).append(unit)
    for key in sorted(reads):
        yield tuple(sorted(reads[key], key=lambda u: u.start))
