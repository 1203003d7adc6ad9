"""Training data: the processed Parquet splits, cut into global token-budget batches.

Nothing is re-tokenized: the revtok token lists written by `deca prepare` are kept and handed to
`mqan.batch.collate` as rows. A split (or a share of it, `read_share`, as validation reads) is a memory-mapped
Arrow table: a worker's own memory holds only a few numbers per example (lengths, costs), whatever the corpus
size (every training worker maps the whole split, so its temporary disk needs the split's uncompressed size).

Batches follow the paper's rule (Appendix D): every batch holds examples of one task only and
``sum over the batch of len(context) + len(question) + 5 * len(answer) <= budget``. (The original code
used ``batch size * running max of max(len c, 5 len a)``, ignoring the question; see the reference §4.)
An example whose own cost exceeds the budget becomes a batch of one, never dropped silently.

Length bucketing as in torchtext's BucketIterator: each epoch shuffles the examples, cuts them into
pools of about ``pool_batches`` budgets' worth, sorts each pool by length, cuts the sorted pool into
batches and shuffles those batches. With ``train.bucketing: exact`` a batch also ends wherever the context or
question length changes in the sorted pool, so every row of a batch has the same context and question
lengths: the encoder's LSTMs then run unpacked (mqan/packing.py), which on a GPU lets cuDNN use its
persistent kernels. The budget rule is unchanged (batches are only cut more often, so they are smaller). Every choice comes from a generator seeded with
(seed, task, epoch), so the batch order of an epoch is a pure function of those, and a stream's
state is just (epoch, index of the next batch): `state_dict` / `load_state_dict` resume exactly.

These are global batches: every training worker reads the whole of each task's split and cuts the same
batches, whatever the number of workers, and trains its own share of each (train/workers.py). The stream's
state is therefore the same on every worker, and a checkpoint written by N workers resumes on any number.
"""
from __future__ import annotations

import os
import tempfile
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from deca.errors import DataError
from deca.schema import EXAMPLE_SCHEMA, bad_shard, shards, split_dir
from train.workers import share

ANSWER_WEIGHT = 5
BUCKETING = ("budget", "exact")  # train.bucketing: cut sorted pools by the budget only, or also by (len c, len q)
TOKEN_COLUMNS = ("context_tokens", "question_tokens", "answer_tokens")
SHARE_BATCH_ROWS = 4096  # rows read from Parquet (and written to the share file) at a time


def read_share(processed_dir: str | Path, task: str, split: str, rank: int = 0, world_size: int = 1,
               columns: Sequence[str] | None = None, limit: int | None = None) -> pa.Table:
    """Rows ``rank, rank + world_size, ...`` of one processed split (all columns unless `columns`), as a
    memory-mapped table.

    `limit` keeps only the first `limit` rows of the split before sharding (e.g. validation caps).
    The share is streamed from the Parquet shards, `SHARE_BATCH_ROWS` rows at a time, into an uncompressed
    Arrow file in the temporary directory (``$TMPDIR``), which is memory-mapped and unlinked at once (its
    space is freed with the table, or when the process ends). The rows then live in the OS page cache,
    read in as batches touch them and dropped again under memory pressure: a worker's own memory does not
    grow with the corpus (the disk needs the share's uncompressed size).
    Raises DataError when the split is missing or this worker's share is empty.
    """
    files = shards(processed_dir, task, split)
    schema = EXAMPLE_SCHEMA if columns is None else pa.schema([EXAMPLE_SCHEMA.field(c) for c in columns])
    fd, tmp = tempfile.mkstemp(prefix=f"deca-{task}-{split}-{rank}-", suffix=".arrow")
    os.close(fd)
    try:
        kept = _write_share(files, schema, tmp, rank, world_size, limit)
        table = pa.ipc.open_file(pa.memory_map(tmp)).read_all()
    finally:
        os.unlink(tmp)
    if kept == 0:
        raise DataError(split_dir(processed_dir, task, split),
                        f"no examples for worker {rank} of {world_size} ({split} split of {task})",
                        fix="use fewer workers (train.num_workers) or a larger split")
    return table


def _write_share(files: Sequence[Path], schema: pa.Schema, path: str, rank: int, world_size: int,
                 limit: int | None) -> int:
    """Write rows ``rank::world_size`` of the first `limit` rows of `files` to an Arrow file; returns their count."""
    seen = kept = 0  # rows of the split read so far, rows written
    with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        for file in files:
            for batch in _batches(file, schema.names):
                n = batch.num_rows if limit is None else min(batch.num_rows, limit - seen)
                picked = np.arange((rank - seen) % world_size, n, world_size)
                if len(picked) == batch.num_rows:
                    writer.write_batch(batch.cast(schema))
                elif len(picked):
                    writer.write_batch(batch.take(pa.array(picked)).cast(schema))
                seen, kept = seen + n, kept + len(picked)
                if limit is not None and seen >= limit:
                    return kept
    return kept


def _batches(file: Path, columns: list[str]) -> Iterator[pa.RecordBatch]:
    """The record batches of one shard; a shard that breaks while read is named (deca.schema.bad_shard)."""
    try:
        yield from pq.ParquetFile(file).iter_batches(batch_size=SHARE_BATCH_ROWS, columns=columns)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise bad_shard(file, exc) from None


def lengths(table: pa.Table) -> dict[str, np.ndarray]:
    """Token counts of context, question and answer per row."""
    return {col.split("_")[0]: pc.list_value_length(table[col]).to_numpy(zero_copy_only=False).astype(np.int64)
            for col in TOKEN_COLUMNS}


def example_costs(table: pa.Table) -> np.ndarray:
    """The paper's per-example batch cost: len(context) + len(question) + 5 * len(answer)."""
    n = lengths(table)
    return n["context"] + n["question"] + ANSWER_WEIGHT * n["answer"]


def cut_batches(order: np.ndarray, costs: np.ndarray, budget: int,
                groups: np.ndarray | None = None) -> list[np.ndarray]:
    """Cut `order` (example indices) greedily into consecutive batches whose costs sum to <= budget; with
    `groups` (one value per example), also wherever the group changes."""
    batches: list[np.ndarray] = []
    start, total = 0, 0
    for pos, idx in enumerate(order):
        cost = int(costs[idx])
        new_group = groups is not None and pos > start and groups[idx] != groups[order[pos - 1]]
        if pos > start and (total + cost > budget or new_group):
            batches.append(order[start:pos])
            start, total = pos, 0
        total += cost
    if len(order) > start:
        batches.append(order[start:])
    return batches


def task_seed(seed: int, task: str) -> list[int]:
    """Entropy for one task's stream (stable across processes, unlike hash()). The trailing 0 is the rank of the
    one worker whose stream it was when every worker cut its own batches: one-worker checkpoints resume alike."""
    return [seed, zlib.crc32(task.encode("utf-8")), 0]


class TokenBudgetStream:
    """An endless, seeded stream of token-budget batches (arrays of row indices) over one task."""

    def __init__(self, costs: np.ndarray, sort_keys: np.ndarray, budget: int, seed: Sequence[int],
                 pool_batches: int = 100, groups: np.ndarray | None = None):
        if budget <= 0:
            raise ValueError(f"token budget must be positive, got {budget}")
        if len(costs) == 0:
            raise ValueError("a batch stream needs at least one example")
        self.costs = np.asarray(costs, dtype=np.int64)
        self.sort_keys = np.asarray(sort_keys)
        self.groups = None if groups is None else np.asarray(groups)  # a batch never spans two groups
        self.budget = int(budget)
        self.seed = list(seed)
        self.pool_tokens = max(1, int(pool_batches)) * self.budget
        self.epoch = 0
        self.index = 0
        self._plan: list[np.ndarray] | None = None

    def plan(self, epoch: int) -> list[np.ndarray]:
        """Every batch of one epoch, in order (a pure function of the seed and `epoch`)."""
        rng = np.random.default_rng([*self.seed, epoch])
        order = rng.permutation(len(self.costs))
        batches: list[np.ndarray] = []
        cum = np.cumsum(self.costs[order])
        # pool boundaries: each pool holds about pool_tokens of cost (at least one example)
        bounds = [0]
        while bounds[-1] < len(order):
            base = cum[bounds[-1] - 1] if bounds[-1] else 0
            end = int(np.searchsorted(cum, base + self.pool_tokens, side="right"))
            bounds.append(max(end, bounds[-1] + 1))
        for lo, hi in zip(bounds, bounds[1:]):
            pool = order[lo:hi]
            pool = pool[np.argsort(self.sort_keys[pool], kind="stable")]
            pool_batches = cut_batches(pool, self.costs, self.budget, self.groups)
            batches.extend(pool_batches[i] for i in rng.permutation(len(pool_batches)))
        return batches

    def __iter__(self) -> Iterator[np.ndarray]:
        return self

    def __next__(self) -> np.ndarray:
        if self._plan is None:
            self._plan = self.plan(self.epoch)
        if self.index >= len(self._plan):
            self.epoch, self.index = self.epoch + 1, 0
            self._plan = self.plan(self.epoch)
        batch = self._plan[self.index]
        self.index += 1
        return batch

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self.epoch, self.index = int(state["epoch"]), int(state["index"])
        self._plan = None


def take_rows(batches: Sequence[pa.RecordBatch], starts: np.ndarray, idx: np.ndarray) -> list[dict[str, Any]]:
    """Rows `idx` (in that order) of the table made of `batches`, whose first rows are at `starts`, as dicts.

    Each record batch is asked for its own rows: `pa.Table.take` works on whole chunked columns, so its cost
    grows with the table (an epoch of batches would cost the table size times the number of batches).
    """
    idx = np.asarray(idx, dtype=np.int64)
    chunk = np.searchsorted(starts, idx, side="right") - 1
    rows: list[Any] = [None] * len(idx)
    for c in np.unique(chunk):
        where = np.flatnonzero(chunk == c)
        for pos, row in zip(where, batches[c].take(pa.array(idx[where] - starts[c])).to_pylist()):
            rows[pos] = row
    return rows


class TaskData:
    """One task's training rows and its endless stream of global batches."""

    def __init__(self, task: str, table: pa.Table, budget: int, seed: int, pool_batches: int = 100,
                 bucketing: str = "budget"):
        if bucketing not in BUCKETING:
            raise ValueError(f"train.bucketing: {bucketing!r} unknown; choose one of {', '.join(BUCKETING)}")
        self.task = task
        self.table = table
        self._batches = table.to_batches()
        self._starts = np.cumsum([0] + [b.num_rows for b in self._batches])[:-1]
        n = lengths(table)
        costs = n["context"] + n["question"] + ANSWER_WEIGHT * n["answer"]
        answer_span = int(n["answer"].max()) + 1
        if bucketing == "exact":  # sort by (len c, len q, len a); a batch holds one (len c, len q)
            groups = n["context"] * (int(n["question"].max()) + 1) + n["question"]
            keys = groups * answer_span + n["answer"]
        else:  # context+question length, then answer length (as BucketIterator's interleaved keys)
            groups, keys = None, (n["context"] + n["question"]) * answer_span + n["answer"]
        self.stream = TokenBudgetStream(costs, keys, budget, task_seed(seed, task), pool_batches, groups)
        self.costs = costs
        self.tokens = n["context"] + n["question"] + n["answer"]

    def next_batch(self, rank: int = 0, world: int = 1) -> tuple[list[dict[str, Any]], int]:
        """Worker `rank`'s share (of `world`) of the next global batch as processed-schema rows (none when the
        batch has fewer examples than workers), and their token count (context+question+answer)."""
        idx = share(next(self.stream), rank, world)
        return take_rows(self._batches, self._starts, idx), int(self.tokens[idx].sum())


class MultiTaskData:
    """The training rows of every task, each with its stream of global batches, and a joint state for
    checkpoints (the same on every worker)."""

    def __init__(self, processed_dir: str | Path, tasks: Sequence[str], budget: int, seed: int,
                 pool_batches: int = 100, columns: Sequence[str] | None = None, split: str = "train",
                 bucketing: str = "budget"):
        self.tasks = {t: TaskData(t, read_share(processed_dir, t, split, columns=columns), budget, seed,
                                  pool_batches, bucketing)
                      for t in tasks}

    def next_batch(self, task: str, rank: int = 0, world: int = 1) -> tuple[list[dict[str, Any]], int]:
        """Worker `rank`'s share of the next global batch of `task` (see TaskData.next_batch)."""
        return self.tasks[task].next_batch(rank, world)

    def num_examples(self) -> dict[str, int]:
        return {t: d.table.num_rows for t, d in self.tasks.items()}

    def state_dict(self) -> dict[str, Any]:
        return {"layout": "global", "streams": {t: d.stream.state_dict() for t, d in self.tasks.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue where `state_dict` was taken, on any number of workers. A state written when every worker cut
        its own batches (no "layout") resumes only if one worker wrote it: its stream is today's global one."""
        if state.get("layout") != "global" and state.get("world_size", 1) != 1:
            raise ValueError(f"data state of worker {state['rank']} of {state['world_size']} was written when each "
                             "worker cut its own batches; it cannot resume with global batches: train this run "
                             "again from the start")
        for task, s in state["streams"].items():
            if task in self.tasks:
                self.tasks[task].stream.load_state_dict(s)
