"""The steps of the `deca prepare` Beam pipeline, as small DoFns with Beam Metrics counters.

Elements flowing between the steps are plain tuples and dicts (cheap to encode on any runner):

- a read batch: ``(task, split, [(seq, example_dict), ...])``; `seq` is the position in the reader's
  output (examples and drops together), which orders rows inside a shard and assigns shards;
- a shard chunk: ``((task, split, shard), [(seq, row), ...])`` with rows in `deca.schema.EXAMPLE_SCHEMA`;
- a drop record (tagged output ``dropped``): ``{"id", "task", "split", "reason", "detail", "seq"}``;
- an error record (tagged output ``errors``): a `deca.errors.DataError` flattened to a dict.

Data errors are routed to the ``errors`` output instead of being raised, so that no runner retries a
deterministic failure, and the driver can re-raise them with their file and line intact.
"""
from __future__ import annotations

import dataclasses
import json
import operator
import zlib
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
STATS = "stats"
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
    """(task, split) -> batches of the task reader's examples (main output) and its drops.

    One input element is a whole split; readers are generators, so a split streams through and only
    one batch (``batch_size`` examples) is held at a time. Batches keep the per-element cost of the
    following shuffle low while leaving plenty of elements to spread over workers.
    """

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any],
                 files: Mapping[tuple[str, str], Sequence[str]], batch_size: int = 256):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.files = {key: list(paths) for key, paths in files.items()}
        self.batch_size = batch_size

    def process(self, element: tuple[str, str]) -> Iterator[Any]:
        name, split = element
        task = self.tasks[name]
        paths = [Path(p) for p in self.files[(name, split)]]
        batch: list[tuple[int, dict]] = []
        seq = 0
        try:
            check_not_empty(paths)
            for item in task.read(split, paths, self.options[name]):
                if isinstance(item, Dropped):
                    self.inc(name, split, f"dropped.{item.reason}")
                    yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq, item))
                else:
                    batch.append((seq, _example_dict(item)))
                    if len(batch) >= self.batch_size:
                        self.inc(name, split, "read", len(batch))
                        yield name, split, batch
                        batch = []
                seq += 1
            if seq == 0:
                raise DataError(", ".join(map(str, paths)), f"no {split} examples in the file(s)",
                                fix="the file is empty or not in the official format: re-download it "
                                    "(`deca download`) or copy it again from the mirror")
        except DataError as err:
            self.inc(name, split, "errors")
            yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
        if batch:
            self.inc(name, split, "read", len(batch))
            yield name, split, batch


def check_not_empty(paths: Sequence[Path]) -> None:
    """A 0-byte raw file is a truncated download, whatever its format: refuse it before any reader runs."""
    for path in paths:
        if path.is_file() and path.stat().st_size == 0:
            raise DataError(path, "empty file (0 bytes)", fix="re-download it (`deca download`) or copy it again "
                                                               "from the mirror")


def _example_dict(ex: Example) -> dict[str, Any]:
    # A shallow dict (dataclasses.asdict deep-copies every answer list and gold dict: slow).
    return {"id": ex.id, "context": ex.context, "question": ex.question, "answer": ex.answer,
            "answers": ex.answers, "gold": ex.gold}


def id_bucket(ident: str, buckets: int = ID_BUCKETS) -> int:
    """A stable bucket for an id (Python's str hash differs between worker processes)."""
    return zlib.crc32(ident.encode("utf-8")) % buckets


class ToRow(_Counted):
    """A batch of read examples -> processed rows (lowercase, revtok, the task's row hook).

    Outputs, per batch: ``((task, split, shard), [(seq, row), ...])`` chunks (main), partial
    statistics ``((task, split), accumulator)`` (``stats``), ids ``((task, split, bucket), [id, ...])``
    (``ids``, for the uniqueness check), and one record per drop or data error.
    """

    def __init__(self, tasks: Mapping[str, Task], options: Mapping[str, Any], lowercase: bool = True,
                 rows_per_shard: int = 5000, num_shards: int = 0, train_filter: Any = None):
        super().__init__()
        self.tasks = dict(tasks)
        self.options = dict(options)
        self.lowercase = lowercase
        self.train_filter = train_filter
        self.rows_per_shard = rows_per_shard
        self.num_shards = num_shards

    def shard(self, seq: int) -> int:
        """Contiguous runs of `rows_per_shard` reader positions per shard, or round-robin over
        exactly `num_shards` shards when that is set."""
        return seq % self.num_shards if self.num_shards > 0 else seq // self.rows_per_shard

    def process(self, element: tuple[str, str, list]) -> Iterator[Any]:
        name, split, batch = element
        task, options = self.tasks[name], self.options[name]
        chunks: dict[int, list] = {}
        ids: dict[int, list] = {}
        acc = stats.new_accumulator()
        for seq, example in batch:
            try:
                result = to_row(task, split, Example(**example), options, self.lowercase, self.train_filter)
            except DataError as err:
                self.inc(name, split, "errors")
                yield beam.pvalue.TaggedOutput(ERRORS, error_record(err, name, split))
                continue
            if isinstance(result, Dropped):
                self.inc(name, split, f"dropped.{result.reason}")
                yield beam.pvalue.TaggedOutput(DROPPED, drop_record(name, split, seq, result))
                continue
            stats.add_lengths(acc, stats.lengths(result))
            chunks.setdefault(self.shard(seq), []).append((seq, result))
            ids.setdefault(id_bucket(result["id"]), []).append(result["id"])
        if not acc[0]:
            return
        self.inc(name, split, "rows", acc[0])
        self.inc(name, split, "tokens", sum(acc[1:1 + len(stats.FIELDS)]))
        for shard, rows in chunks.items():
            yield (name, split, shard), rows
        for bucket, idents in ids.items():
            yield beam.pvalue.TaggedOutput(IDS, ((name, split, bucket), idents))
        yield beam.pvalue.TaggedOutput(STATS, ((name, split), acc))


class WriteShard(_Counted):
    """((task, split, shard), [(seq, row), ...]) -> staging/<task>/<split>/part-<shard>.parquet, rows in reader order.

    Sorting makes the output bytes independent of the runner's bundling; a shard holds at most
    ``rows_per_shard`` rows, which bounds this step's memory.
    """

    def __init__(self, staging_root: str):
        super().__init__()
        self.staging_root = staging_root

    def process(self, element: tuple[tuple[str, str, int], Any]) -> Iterator[tuple[str, str, int]]:
        (name, split, shard), chunks = element
        rows = [row for _, row in sorted((r for chunk in chunks for r in chunk), key=operator.itemgetter(0))]
        sinks.write_rows(rows, EXAMPLE_SCHEMA, Path(self.staging_root) / name / split / sinks.shard_name(shard))
        self.inc(name, split, "shards")
        yield name, split, len(rows)


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
