"""The vocabulary as a Beam combine over the processed training splits: `deca prepare --vocab`.

Counts every token of ``context_tokens``, ``question_tokens`` and ``answer_tokens`` in the train
split of each chosen task, keeps the `size` most frequent (ties broken by the token, ascending) and
writes ``data/vocab.txt``: one token per line as ``json.dumps(token) + "\\t" + count``, most frequent
first. The result depends only on the data: it is the same for any runner, sharding or bundling.

Pipeline: Create[shard files] -> Reshuffle -> CountFile (pyarrow value_counts per record batch)
-> CombinePerKey(sum) -> CombineGlobally(TopTokensFn) -> write to a temporary file; the driver renames
it into place after success.
"""
from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from pipelines import beam_options  # first: quiets Beam's import-time warning

import apache_beam as beam  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.compute as pc  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from apache_beam.metrics import Metrics  # noqa: E402

from deca.config import PrepareConfig  # noqa: E402
from deca.errors import ConfigError, DataError  # noqa: E402
from deca.io import atomic_write  # noqa: E402
from deca.registry import get_task  # noqa: E402
from deca.schema import split_dir  # noqa: E402
from pipelines import sinks  # noqa: E402

LOG = logging.getLogger(__name__)
TOKEN_COLUMNS = ("context_tokens", "question_tokens", "answer_tokens")
NAMESPACE = "deca.vocab"


def vocab_tasks(names: Sequence[str]) -> list[str]:
    """The tasks among `names` that contribute to the vocabulary: those with a train split, not eval-only."""
    return [n for n in names if "train" in get_task(n).splits and not get_task(n).eval_only]


def train_shards(processed: str | Path, tasks: Sequence[str]) -> list[str]:
    """Every Parquet shard of the chosen tasks' train splits; a missing split is a DataError with the fix."""
    files: list[str] = []
    for name in tasks:
        path = split_dir(processed, name, "train")
        shards = sorted(path.glob("part-*.parquet"))
        if not shards:
            raise DataError(path, f"no processed train split for task {name!r} (needed for the vocabulary)",
                            fix=f"run `deca prepare --tasks {name}` first")
        files += [str(p) for p in shards]
    return files


class CountFile(beam.DoFn):
    """One Parquet shard -> (token, count) pairs, counted per record batch with pyarrow (fast, bounded)."""

    def __init__(self, batch_size: int = 8192):
        self.batch_size = batch_size
        self.rows = Metrics.counter(NAMESPACE, "rows")
        self.tokens = Metrics.counter(NAMESPACE, "tokens")

    def process(self, path: str) -> Iterator[tuple[str, int]]:
        try:
            reader = pq.ParquetFile(path)
            for batch in reader.iter_batches(batch_size=self.batch_size, columns=list(TOKEN_COLUMNS)):
                flat = pa.concat_arrays([pc.list_flatten(batch.column(c)) for c in TOKEN_COLUMNS])
                self.rows.inc(batch.num_rows)
                self.tokens.inc(len(flat))
                counts = pc.value_counts(flat)
                yield from zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist())
        except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise DataError(path, f"cannot read this processed shard ({exc})",
                            fix="rerun `deca prepare` for its task") from None


def _rank(kv: tuple[str, int]) -> tuple[int, str]:
    return -kv[1], kv[0]


class TopTokensFn(beam.CombineFn):
    """The `size` (token, count) pairs with the highest counts, ties by token ascending; output sorted.

    The accumulator is a list of at most ~2·size pairs, trimmed by sorting: memory stays bounded
    by the vocabulary size, not the number of distinct tokens.
    """

    def __init__(self, size: int):
        if size < 1:
            raise ConfigError(f"prepare.vocab_size must be at least 1, got {size}")
        self.size = size

    def _trim(self, acc: list) -> list:
        acc.sort(key=_rank)
        del acc[self.size:]
        return acc

    def create_accumulator(self) -> list:
        return []

    def add_input(self, acc: list, kv: tuple[str, int]) -> list:
        acc.append((kv[0], int(kv[1])))
        if len(acc) >= 2 * self.size + 1024:
            self._trim(acc)
        return acc

    def merge_accumulators(self, accs: Iterable[list]) -> list:
        merged: list = []
        for acc in accs:
            merged.extend(acc)
            if len(merged) >= 2 * self.size + 1024:
                self._trim(merged)
        return self._trim(merged)

    def extract_output(self, acc: list) -> list:
        return self._trim(list(acc))


def format_vocab(pairs: Iterable[tuple[str, int]]) -> str:
    """The vocab.txt text: ``json.dumps(token)<TAB>count`` per line."""
    return "".join(f"{json.dumps(token, ensure_ascii=False)}\t{count}\n" for token, count in pairs)


def _write(pairs: list, path: str) -> int:
    sinks.write_text(path, format_vocab(pairs))
    return len(pairs)


def build(p: beam.Pipeline, files: Sequence[str], size: int, tmp_path: str) -> None:
    """Add the vocabulary transforms to `p`: count tokens of `files`, write the top `size` to `tmp_path`."""
    _ = (p
         | "Shards" >> beam.Create(list(files))
         | "Reshuffle" >> beam.Reshuffle()
         | "CountFile" >> beam.ParDo(CountFile())
         | "Sum" >> beam.CombinePerKey(sum)
         | "Top" >> beam.CombineGlobally(TopTokensFn(size))
         | "Write" >> beam.Map(_write, tmp_path))


def run(tasks: Sequence[str], processed: str | Path, vocab_path: str | Path, cfg: PrepareConfig,
        beam_args: Sequence[str] = (), size: int | None = None) -> dict[str, Any]:
    """Build the vocabulary of `tasks` from the processed data and write it atomically to `vocab_path`."""
    size = cfg.vocab_size if size is None else size
    if size < 1:
        raise ConfigError(f"vocabulary size {size} (--vocab-size or prepare.vocab_size): must be >= 1")
    for path in (processed, vocab_path):
        if "://" in str(path):
            raise ConfigError(f"{path}: URLs are not supported; use a filesystem path shared by the driver and workers")
    chosen = vocab_tasks(tasks)
    if not chosen:
        raise ConfigError(f"none of the tasks {', '.join(tasks)} has a training split; no vocabulary to build")
    files = train_shards(processed, chosen)
    vocab_path = Path(vocab_path)
    options = beam_options.pipeline_options(cfg, beam_args)
    start = time.perf_counter()
    LOG.info("vocabulary of %s (%d train shards), top %s -> %s", ", ".join(chosen), len(files), f"{size:,}", vocab_path)
    results = []

    def run_into(tmp: Path) -> None:  # the workers write `tmp`; the driver renames it in after success
        tmp.unlink()  # so that a pipeline that wrote nothing shows
        with beam_options.job_runner(options) as (runner, _):
            p = beam.Pipeline(runner=runner, options=options)
            build(p, files, size, str(tmp))
            results.append(beam_options.run_pipeline(p))
        if not tmp.exists():
            raise DataError(vocab_path, "the vocabulary pipeline wrote nothing",
                            fix="is the output on a filesystem the workers share?")

    atomic_write(vocab_path, run_into)
    counts = beam_options.counters(results[0], NAMESPACE)
    n = sum(1 for _ in vocab_path.open(encoding="utf-8"))
    return {"tasks": chosen, "path": str(vocab_path), "size": n, "rows": counts.get("rows", 0),
            "tokens": counts.get("tokens", 0), "seconds": time.perf_counter() - start}


def load_counts(path: str | Path) -> list[tuple[str, int]]:
    """Read a vocab.txt back as (token, count) pairs (for checks and tests)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            token, count = line.rstrip("\n").rsplit("\t", 1)
            out.append((json.loads(token), int(count)))
    return out
