"""The steps of the `deca prepare` Beam pipeline, as small DoFns with Beam Metrics counters.

Elements flowing between the steps are plain tuples and dicts (cheap to encode on any runner):

- a read item: ``(task, split, seq, example_dict)``; `seq` is the position in the reader's output
  (examples and drops together), which orders rows inside a shard and assigns shards;
- a row: ``(task, split, seq, row)`` with `row` in `deca.schema.EXAMPLE_SCHEMA`;
- a drop record (tagged output ``dropped``): ``{"id", "task", "split", "reason", "detail", "seq"}``;
- an error record (tagged output ``errors``): a `deca.errors.DataError` flattened to a dict.

Data errors are routed to the ``errors`` output instead of being raised, so that no runner retries a
deterministic failure, and the driver can re-raise them with their file and line intact.
"""
from __future__ import annotations

import dataclasses
import json
import operator
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402
from apache_beam.metrics import Metrics

from deca.errors import DataError, _rebuild_data_error
from deca.registry import Dropped, Example, Task
from deca.schema import DROPPED_SCHEMA, EXAMPLE_SCHEMA
from pipelines import sinks, stats
from pipelines.rows import to_row

NAMESPACE = "deca.prepare"
DROPPED = "dropped"
ERRORS = "errors"


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
    """A DoFn with lazily created counters named ``<task>.<split>.<what>``."""

    def __init__(self) -> None:
        self._counters: dict[str, Any] = {}

    def inc(self, task: str, split: str, what: str, n: int = 1) -> None:
        name = f"{task}.{split}.{what}"
        counter = self._counters.get(name)
        if counter is None:
            counter = self._counters[name] = Metrics.counter(NAMESPACE, name)
        counter.inc(n)


class ReadSplit(_Counted):
    """(task, split) -> the task reader's examples (main output) and drops; one element is a whole split.

    Readers are generators, so a split streams through and is never held in memory.
    """

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any],
                 files: Mapping[tuple[str, str], Sequence[str]]):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.files = {key: list(paths) for key, paths in files.items()}

    def process(self, element: tuple[str, str]) -> Iterator[Any]:
        name, split = element
        task = self.tasks[name]
        paths = [Path(p) for p in self.files[(name, split)]]
        seq = 0
        try:
            for item in task.read(split, paths, self.options[name]):
                if isinstance(item, Dropped):
                    self.inc(name, split, f"dropped.{item.reason}")
                    yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq, item))
                else:
                    self.inc(name, split, "read")
                    yield name, split, seq, dataclasses.asdict(item)
                seq += 1
        except DataError as err:
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))


class ToRow(_Counted):
    """A read item -> a processed row (lowercase, revtok, the task's row hook) or a drop record."""

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any], lowercase: bool = True):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.lowercase = lowercase

    def process(self, item: tuple[str, str, int, dict]) -> Iterator[Any]:
        name, split, seq, example = item
        try:
            result = to_row(self.tasks[name], split, Example(**example), self.options[name], self.lowercase)
        except DataError as err:
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
            return
        if isinstance(result, Dropped):
            self.inc(name, split, f"dropped.{result.reason}")
            yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq, result))
            return
        self.inc(name, split, "rows")
        self.inc(name, split, "tokens", sum(stats.lengths(result)))
        yield name, split, seq, result


def shard_key(rows_per_shard: int, num_shards: int):
    """Map a row to ``((task, split, shard), (seq, row))``: contiguous runs of `rows_per_shard` reader
    positions per shard, or round-robin over exactly `num_shards` shards when that is set."""

    def key(item: tuple[str, str, int, dict]) -> tuple[tuple[str, str, int], tuple[int, dict]]:
        name, split, seq, row = item
        shard = seq % num_shards if num_shards > 0 else seq // rows_per_shard
        return (name, split, shard), (seq, row)

    return key


class WriteShard(_Counted):
    """((task, split, shard), [(seq, row), ...]) -> staging/<task>/<split>/part-<shard>.parquet, rows in reader order.

    Sorting makes the output bytes independent of the runner's bundling; a shard holds at most
    ``rows_per_shard`` rows, which bounds this step's memory.
    """

    def __init__(self, staging_root: str):
        super().__init__()
        self.staging_root = staging_root

    def process(self, element: tuple[tuple[str, str, int], Any]) -> Iterator[tuple[str, str, int]]:
        (name, split, shard), values = element
        rows = [row for _, row in sorted(values, key=operator.itemgetter(0))]
        sinks.write_rows(rows, EXAMPLE_SCHEMA, Path(self.staging_root) / name / split / sinks.shard_name(shard))
        self.inc(name, split, "shards")
        yield name, split, len(rows)


def duplicate_error(key_count: tuple[tuple[str, str, str], int], files: Mapping[tuple[str, str], Sequence[str]]) -> dict:
    """An error record for an id that occurs more than once in a task split."""
    (name, split, ident), count = key_count
    paths = files.get((name, split)) or ["?"]
    err = DataError(paths[0], f"task {name!r} split {split!r}: id {ident!r} occurs {count} times; ids must be unique",
                    fix=f"make the reader of task {name!r} (deca/tasks/) give every example its own id")
    return error_record(err, name, split)


class FinalizeTask(beam.DoFn):
    """(task, [("seed"|"split"|"drop", payload), ...]) -> staging/<task>/stats.json and dropped.parquet.

    Also writes an empty shard (schema only) for a split without any example, so that every prepared
    split has at least one Parquet file. Drops of one task are held in memory to order them.
    """

    def __init__(self, staging_root: str, splits: Mapping[str, Sequence[str]], options: Mapping[str, Any]):
        self.staging_root = staging_root
        self.splits = {name: list(s) for name, s in splits.items()}
        self.options = {name: _options_dict(o) for name, o in options.items()}

    def process(self, element: tuple[str, Any]) -> Iterator[tuple[str, dict]]:
        name, values = element
        split_stats: dict[str, dict] = {}
        drops: list[dict] = []
        for kind, payload in values:
            if kind == "split":
                split, summary = payload
                split_stats[split] = summary
            elif kind == "drop":
                drops.append(payload)
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
