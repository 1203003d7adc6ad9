"""The steps of the `deca prepare` Beam pipeline, as small DoFns with Beam Metrics counters.

Elements flowing between the steps are small tuples and dicts (no example or row crosses a shuffle:
the worker that converts a shard reads its range of the raw file and writes its Parquet file):

- a `Unit`: one shard of a split, as a range of reader positions (`seq`: the position in the reader's
  output, examples and drops together, which assigns shards and orders rows inside a shard);
- partial statistics ``((task, split), stats.SplitTotals)`` and ids ``((task, split, bucket), [id, ...])``;
- a drop record (tagged output ``dropped``): ``{"id", "task", "split", "reason", "detail", "seq"}``;
- an error record (tagged output ``errors``): a `deca.errors.DataError` flattened to a dict.

Data errors are routed to the ``errors`` output instead of being raised, so that no runner retries a
deterministic failure, and the driver can re-raise them with their file and line intact.
"""
from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from pipelines import beam_options  # first: quiets Beam's import-time warning

import apache_beam as beam  # noqa: E402
from apache_beam.metrics import Metrics

from deca.errors import DataError, _rebuild_data_error
from deca.registry import Dropped, Example, Task
from deca.schema import DROPPED_SCHEMA, EXAMPLE_SCHEMA
from pipelines import sinks, stats
from pipelines.rows import TextCache, to_row
from pipelines.units import READ_COST, Unit, example_cost, read_ranges, shard_of

NAMESPACE = "deca.prepare"
DROPPED = "dropped"
ERRORS = "errors"
IDS = "ids"
ID_BUCKETS = 64  # the id-uniqueness check holds one bucket of a split's ids at a time


def drop_record(task: str, split: str, seq: int, dropped: Dropped) -> dict[str, Any]:
    return {"id": str(dropped.id), "task": task, "split": split, "reason": dropped.reason,
            "detail": dropped.detail or "", "seq": seq}


def error_record(err: DataError, task: str, split: str) -> dict[str, Any]:
    """A DataError as a JSON-able dict (rebuilt by `error_from_record`)."""
    return {"task": task, "split": split, "path": err.path, "line": err.line, "fix": err.fix,
            "message": err.args[0] if err.args else str(err)}


def error_from_record(rec: Mapping[str, Any]) -> DataError:
    """The DataError described by an error record (same message, file, line and fix)."""
    return _rebuild_data_error(rec["path"], rec["message"], rec.get("line"), rec.get("fix"))


class _Counted(beam.DoFn):
    """A DoFn with lazily created counters named ``<task>.<split>.<what>`` (and a quick exit of the
    worker process it runs in: `beam_options.fast_worker_exit`)."""

    def __init__(self) -> None:
        self._counters: dict[str, Any] = {}

    def setup(self) -> None:
        beam_options.fast_worker_exit()

    def inc(self, task: str, split: str, what: str, n: int = 1) -> None:
        name = f"{task}.{split}.{what}"
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = Metrics.counter(NAMESPACE, name)
        counter.inc(n)


def check_not_empty(paths: Sequence[Path]) -> None:
    """A 0-byte raw file is a truncated download, whatever its format: refuse it before any reader runs."""
    for path in paths:
        if path.is_file() and path.stat().st_size == 0:
            raise DataError(path, "empty file (0 bytes)", fix="re-download it (`deca download`) or copy it again "
                                                               "from the mirror")


def id_bucket(ident: str, buckets: int = ID_BUCKETS) -> int:
    """A stable bucket for an id (Python's str hash differs between worker processes)."""
    return zlib.crc32(ident.encode("utf-8")) % buckets


class PlanSplit(_Counted):
    """(task, split) -> one `Unit` per shard that has examples (main output), and the reader's drops.

    Reads the split once (a reader is a generator: nothing is held but per-shard totals) to count its
    examples; `ConvertShard` reads each shard's range again where it runs. A split whose reader fails
    gets an error record and no unit.
    """

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any],
                 files: Mapping[tuple[str, str], Sequence[str]], rows_per_shard: int = 5000, num_shards: int = 0):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.files = {key: list(paths) for key, paths in files.items()}
        self.rows_per_shard = rows_per_shard
        self.num_shards = num_shards

    def process(self, element: tuple[str, str]) -> Iterator[Any]:
        name, split = element
        paths = [Path(p) for p in self.files[(name, split)]]
        costs: dict[int, int] = {}
        seq, examples, previous = 0, 0, None
        try:
            check_not_empty(paths)
            for seq, item in enumerate(self.tasks[name].read(split, paths, self.options[name]), start=1):
                if isinstance(item, Dropped):
                    self.inc(name, split, f"dropped.{item.reason}")
                    yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq - 1, item))
                    continue
                shard = shard_of(seq - 1, self.rows_per_shard, self.num_shards)
                costs[shard] = costs.get(shard, 0) + example_cost(item, previous)
                examples, previous = examples + 1, item
            if seq == 0:
                raise DataError(", ".join(map(str, paths)), f"no {split} examples in the file(s)",
                                fix="the file is empty or not in the official format: re-download it "
                                    "(`deca download`) or copy it again from the mirror")
        except DataError as err:
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
            return
        self.inc(name, split, "read", examples)
        yield from self.units(name, split, seq, costs)

    def units(self, name: str, split: str, total: int, costs: Mapping[int, int]) -> Iterator[Unit]:
        """The units of the shards that hold examples; `total` reader positions in the split. A unit
        costs its examples' `example_cost` plus `READ_COST` per position it reads: its range (a pass reads a
        split once for all its ranges), or the whole split for a round-robin unit."""
        for shard, cost in sorted(costs.items()):
            if self.num_shards > 0:
                start, stop, step = shard, total, self.num_shards
            else:
                start, stop, step = shard * self.rows_per_shard, min((shard + 1) * self.rows_per_shard, total), 1
            read = stop - start if step == 1 else stop
            yield Unit(name, split, shard, start, stop, step, cost + READ_COST * read)


class ConvertShard(_Counted):
    """A pass of `Unit`s (`passes`) -> staging/<task>/<split>/part-<shard>.parquet each, written where it runs.

    Reads the units' ranges of the split (one read per pass), converts each (lowercase, revtok with a
    `rows.TextCache`, the task's row hook) and writes its rows in reader order, `batch_size` rows converted
    to Arrow at a time; one shard is held at a time.
    Outputs partial statistics ``((task, split), stats.SplitTotals)`` (main), ids ``((task, split, bucket),
    [id, ...])`` (``ids``, for the uniqueness check), and one record per row-hook drop or data error.
    """

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any],
                 files: Mapping[tuple[str, str], Sequence[str]], staging_root: str, lowercase: bool = True,
                 train_filter: Any = None, batch_size: int = 256):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.files = {key: list(paths) for key, paths in files.items()}
        self.staging_root = staging_root
        self.lowercase = lowercase
        self.train_filter = train_filter
        self.batch_size = batch_size

    def process(self, units: Sequence[Unit]) -> Iterator[Any]:
        """Convert and write the shards of one pass (`passes`), reading their split once."""
        name, split = units[0].task, units[0].split
        paths = [Path(p) for p in self.files[(name, split)]]
        cache, shard, done = TextCache(), ShardRows(self.batch_size), 0
        try:
            for k, seq, example in read_ranges(self.tasks[name], units, paths, self.options[name]):
                while done < k:  # the read is past that unit's range: its shard is complete
                    yield from self.finish(units[done], shard)
                    shard, done = ShardRows(self.batch_size), done + 1
                yield from self.convert(units[k], seq, example, cache, shard)
        except DataError as err:  # the reader failed on a second read (PlanSplit read it without error)
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
            return
        for unit in units[done:]:
            yield from self.finish(unit, shard)
            shard = ShardRows(self.batch_size)

    def convert(self, unit: Unit, seq: int, example: Example, cache: TextCache, shard: ShardRows) -> Iterator[Any]:
        """Convert one example into `shard`, or emit its drop or data-error record."""
        name, split = unit.task, unit.split
        try:
            result = to_row(self.tasks[name], split, example, self.options[name], self.lowercase,
                            self.train_filter, cache)
        except DataError as err:
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
            return
        if isinstance(result, Dropped):
            self.inc(name, split, f"dropped.{result.reason}")
            yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq, result))
        else:
            shard.add(result)

    def finish(self, unit: Unit, shard: ShardRows) -> Iterator[Any]:
        """Write the unit's shard (if it kept any row) and emit its statistics and ids."""
        name, split = unit.task, unit.split
        if not shard.totals.examples:
            return
        path = Path(self.staging_root) / name / split / sinks.shard_name(unit.shard)
        sinks.write_batches(shard.batches(), EXAMPLE_SCHEMA, path)
        self.inc(name, split, "shards")
        self.inc(name, split, "rows", shard.totals.examples)
        self.inc(name, split, "tokens", shard.totals.tokens)
        for bucket, idents in shard.ids.items():
            yield beam.pvalue.TaggedOutput(IDS, ((name, split, bucket), idents))
        yield (name, split), shard.totals


class ShardRows:
    """The rows of one shard as they are converted: Arrow record batches of `batch_size` rows (far
    smaller than the row dicts), their statistics (`stats.SplitTotals`) and the ids by bucket."""

    def __init__(self, batch_size: int):
        self.batch_size = batch_size
        self._rows: list[dict] = []
        self._batches: list = []
        self.totals = stats.SplitTotals()
        self.ids: dict[int, list[str]] = {}

    def add(self, row: dict) -> None:
        self.totals.add(stats.lengths(row))
        self.ids.setdefault(id_bucket(row["id"]), []).append(row["id"])
        self._rows.append(row)
        if len(self._rows) >= self.batch_size:
            self._flush()

    def batches(self) -> list:
        """All the rows added, in order, as record batches."""
        self._flush()
        return self._batches

    def _flush(self) -> None:
        if self._rows:
            self._batches.append(sinks.to_batch(self._rows, EXAMPLE_SCHEMA))
            self._rows = []


def duplicate_errors(element: tuple[tuple[str, str, int], Any],
                     files: Mapping[tuple[str, str], Sequence[str]]) -> Iterator[dict]:
    """Error records for ids that occur more than once in a task split (one id bucket at a time)."""
    (name, split, _), chunks = element
    seen: set[str] = set()
    repeated: dict[str, int] = {}
    for chunk in chunks:
        for ident in chunk:
            if ident in seen:
                repeated[ident] = repeated.get(ident, 1) + 1
            seen.add(ident)
    paths = files.get((name, split)) or ["?"]
    for ident, count in sorted(repeated.items()):
        err = DataError(paths[0], f"task {name!r} split {split!r}: id {ident!r} occurs {count} times; ids must be unique",
                        fix=f"make the reader of task {name!r} (deca/tasks/) give every example its own id")
        yield error_record(err, name, split)


class FinalizeTask(beam.DoFn):
    """(task, {"planned": [split, ...], "split_stats": [(split, summary), ...], "drops": [drop record, ...]})
    (the output of CoGroupByKey over those named inputs) -> staging/<task>/stats.json and dropped.parquet.

    Also writes an empty shard (schema only) for a split without any example, so that every prepared
    split has at least one Parquet file. Drops of one task are held in memory to order them.
    """

    def __init__(self, staging_root: str, splits: Mapping[str, Sequence[str]], options: Mapping[str, Any]):
        self.staging_root = staging_root
        self.splits = {name: list(s) for name, s in splits.items()}
        self.options = {name: _options_dict(o) for name, o in options.items()}

    def process(self, element: tuple[str, Mapping[str, Iterable[Any]]]) -> Iterator[tuple[str, dict]]:
        name, inputs = element
        split_stats: dict[str, dict] = dict(inputs["split_stats"])
        drops: list[dict] = list(inputs["drops"])
        order = {s: i for i, s in enumerate(self.splits[name])}
        drops.sort(key=lambda d: (order.get(d["split"], len(order)), d["seq"]))
        counts: dict[str, dict[str, int]] = {}
        for d in drops:
            by_reason = counts.setdefault(d["split"], {})
            by_reason[d["reason"]] = by_reason.get(d["reason"], 0) + 1
        root = Path(self.staging_root) / name
        for split in self.splits[name]:
            if not split_stats.get(split, {}).get("examples"):
                sinks.write_rows([], EXAMPLE_SCHEMA, root / split / sinks.shard_name(0))
        result = stats.task_stats(name, self.splits[name], split_stats, counts, self.options[name])
        sinks.write_rows([{k: d[k] for k in DROPPED_SCHEMA.names} for d in drops], DROPPED_SCHEMA,
                         root / "dropped.parquet")
        sinks.write_text(root / "stats.json", stats.dump(result))
        yield name, result


def _options_dict(options: Any) -> dict:
    if dataclasses.is_dataclass(options):
        return json.loads(json.dumps(dataclasses.asdict(options), default=str))
    return {}


def write_errors(records: list[dict], staging_root: str) -> None:
    """Write the run's data errors (if any) to staging/_errors.json for the driver to raise."""
    if records:
        records = sorted(records, key=lambda r: (r["task"], r["split"], r["path"], r["line"] or 0, r["message"]))
        sinks.write_text(Path(staging_root) / "_errors.json", json.dumps(records, indent=1) + "\n")
