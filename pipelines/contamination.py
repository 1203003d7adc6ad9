"""The `deca contamination` Beam job: which validation and test examples overlap some task's training data.

What counts as overlap. Every text (context, question, answer) is read from the processed token columns
(the project's own revtok tokenization), each token lowercased with its whitespace marks stripped. A text
of at least N tokens (N = 13) is represented by its word N-grams, a shorter one by its whole token
sequence; each is hashed to 64 bits (blake2b). An evaluation example overlaps training task T in a field
when one of that field's hashes occurs in T's training data (any field of it: an evaluation context may
repeat a training answer or question).

Templates and labels. decaNLP questions are often one template per task ("is this review negative or
positive?", "what is the change in state?") and classification answers are labels ("positive",
"entailment"); matched whole they would flag every example of every task that shares a template or a
label set. So a hash counts as *common* for training task T when it occurs in at least
``max(common_min, common_share × T's training examples)`` of them (defaults 10 and 1%): templates, labels
and boilerplate lines ("by . daily mail reporter ."). Matches of common hashes are not overlap; they are
reported on their own (``common_only``: examples whose only matches are common). A planted or leaked
example (its text once or a few times in training) is found; a text repeated all over training is not
contamination of one evaluation example.

Pipeline::

    Create[shards] -> Reshuffle -> HashShard --train--> ((hash, T), examples of T holding it)
                                                        -> CombinePerKey(sum) -> (hash, (T, count))
                                             --eval---> (hash, (task, split, id, field))
    CoGroupByKey(hash) -> Match (eval x train tasks, common or not) -> Distinct
      -> GroupByKey((task, split)) -> WritePart (<staging>/parts/<task>@<split>.json)

The driver then builds ``contamination.json`` (the task x task matrix: per evaluation task/split and
training task, examples and share overlapping by field context/question/answer/any; ``ngram``: those of
them with a real n-gram match, a text of >= N tokens, as opposed to a short text matched whole; and
common_only)
and ``contaminated_ids.json`` (the ids per evaluation task/split, overall and per training task and
field), all sorted: the output depends only on the data, not on the runner, the bundling or the workers.
The output folder is filled beside its target and swapped in as a whole (`deca.io.replace_dir`): a failed
run leaves the previous output as it was.
"""
from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from apache_beam.metrics import Metrics  # noqa: E402

from deca.config import PrepareConfig  # noqa: E402
from deca.contamination import FORMAT, IDS_FILE, MATRIX_FILE, load_flagged, split_key  # noqa: E402,F401
from deca.errors import ConfigError  # noqa: E402
from deca.io import replace_dir, write_json  # noqa: E402
from deca.registry import get_task  # noqa: E402
from deca.schema import bad_shard, shard_rows, shards  # noqa: E402

LOG = logging.getLogger(__name__)
NAMESPACE = "deca.contamination"
FIELDS = ("context", "question", "answer")
EVAL_SPLITS = ("validation", "test")
NGRAM = 13
COMMON_SHARE = 0.01
COMMON_MIN = 10
# a matrix cell: examples overlapping by field, in any field, by a real n-gram (a text of >= n tokens, not
# common), and matching only common texts
CELL_KEYS = (*FIELDS, "any", "ngram", "common_only")


# ---- hashing -------------------------------------------------------------------------------------------

def normalize(tokens: Iterable[str]) -> list[str]:
    """Tokens as compared: lowercased, revtok's whitespace marks stripped, empty ones dropped."""
    out = []
    for t in tokens:
        t = t.strip().lower()
        if t:
            out.append(t)
    return out


def _h(words: Sequence[str]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(words).encode("utf-8"), digest_size=8).digest(), "big")


def text_hashes(tokens: Iterable[str], n: int = NGRAM) -> set[int]:
    """The 64-bit hashes of a text's word n-grams, or of its whole token sequence when shorter than n
    (none for an empty text)."""
    return hashes_and_kind(tokens, n)[0]


def hashes_and_kind(tokens: Iterable[str], n: int = NGRAM) -> tuple[set[int], bool]:
    """(`text_hashes`, whether the text is shorter than n: hashed whole)."""
    words = normalize(tokens)
    if not words:
        return set(), True
    if len(words) < n:
        return {_h(words)}, True
    return {_h(words[i:i + n]) for i in range(len(words) - n + 1)}, False


def common_threshold(train_examples: int, share: float = COMMON_SHARE, minimum: int = COMMON_MIN) -> int:
    """The training examples a hash must occur in to be common (a template, a label, boilerplate)."""
    return max(minimum, math.ceil(share * train_examples))


# ---- what runs on the workers --------------------------------------------------------------------------

TRAIN, EVAL = "train", "eval"
COLUMNS = ["id", "context_tokens", "question_tokens", "answer_tokens"]


class HashShard(beam.DoFn):
    """One processed shard -> its hashes: for a training shard ((hash, task), examples of the shard holding
    it), main output; for an evaluation shard (hash, (task, split, id, field index)), tagged EVAL."""

    def __init__(self, n: int, batch_size: int = 2048):
        self.n, self.batch_size = n, batch_size
        self.examples = Metrics.counter(NAMESPACE, "examples")
        self.train_ngrams = Metrics.counter(NAMESPACE, "train.ngrams")
        self.eval_ngrams = Metrics.counter(NAMESPACE, "eval.ngrams")

    def process(self, item: tuple[str, str, str, str]) -> Iterator[Any]:
        role, task, split, path = item
        try:
            reader = pq.ParquetFile(path)
            batches = list(reader.iter_batches(batch_size=self.batch_size, columns=COLUMNS))
        except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
            raise bad_shard(path, exc) from None
        counts: Counter = Counter()
        for batch in batches:
            rows = batch.to_pydict()
            ids = rows["id"]
            self.examples.inc(len(ids))
            columns = [rows[f"{f}_tokens"] for f in FIELDS]
            for i, ident in enumerate(ids):
                if role == TRAIN:
                    # examples holding the hash, not occurrences
                    counts.update(set().union(*(text_hashes(col[i], self.n) for col in columns)))
                    continue
                for f, col in enumerate(columns):
                    hashes, short = hashes_and_kind(col[i], self.n)
                    self.eval_ngrams.inc(len(hashes))
                    for h in hashes:
                        yield beam.pvalue.TaggedOutput(EVAL, (h, (task, split, str(ident), f, short)))
        if role == TRAIN:
            self.train_ngrams.inc(len(counts))
            for h, c in counts.items():
                yield (h, task), c


class Match(beam.DoFn):
    """(hash, {train: [(T, count)], eval: [(task, split, id, field, short)]}) -> ((task, split), id, field,
    short, T, common) for every evaluation entry and training task holding the hash."""

    def __init__(self, thresholds: dict[str, int]):
        self.thresholds = thresholds
        self.matched = Metrics.counter(NAMESPACE, "matched_hashes")
        self.common = Metrics.counter(NAMESPACE, "common_hashes")

    def process(self, kv) -> Iterator[tuple]:
        _, groups = kv
        train = Counter()
        for t, c in groups[TRAIN]:
            train[t] += c
        if not train:
            return
        entries = list(groups[EVAL])
        if not entries:
            return
        self.matched.inc()
        for t, c in sorted(train.items()):
            common = c >= self.thresholds[t]
            if common:
                self.common.inc()
            for task, split, ident, f, short in entries:
                yield (task, split), ident, f, short, t, common


class WritePart(beam.DoFn):
    """((task, split), matches) -> <parts>/<task>@<split>.json: per training task, the ids by field."""

    def __init__(self, parts_dir: str):
        self.parts_dir = parts_dir
        self.overlaps = Metrics.counter(NAMESPACE, "overlapping_examples")

    def process(self, kv) -> Iterator[str]:
        (task, split), matches = kv
        cells: dict[str, dict[str, set]] = {}
        for ident, f, short, t, common in matches:
            cell = cells.setdefault(t, {name: set() for name in (*FIELDS, "ngram", "common")})
            cell["common" if common else FIELDS[f]].add(ident)
            if not (common or short):
                cell["ngram"].add(ident)
        out, flagged = {}, set()
        for t in sorted(cells):
            cell = cells[t]
            any_ids = cell["context"] | cell["question"] | cell["answer"]
            flagged |= any_ids
            out[t] = {**{f: sorted(cell[f]) for f in FIELDS}, "any": sorted(any_ids), "ngram": sorted(cell["ngram"]),
                      "common_only": sorted(cell["common"] - any_ids)}
        self.overlaps.inc(len(flagged))
        path = Path(self.parts_dir) / f"{task}@{split}.json"
        from deca.io import write_text

        write_text(path, json.dumps({"task": task, "split": split, "cells": out}, sort_keys=True))
        yield str(path)


def _match_key(m: tuple) -> tuple:
    return m[0], m[1:]


# ---- the job -------------------------------------------------------------------------------------------

@dataclass
class ContaminationJob:
    """What one run compares: the training splits and the evaluation splits, and where output goes."""

    processed: Path
    out: Path
    train: list[str]  # tasks whose training data is hashed
    evals: list[tuple[str, str]]  # (task, split) checked against it
    n: int = NGRAM
    common_share: float = COMMON_SHARE
    common_min: int = COMMON_MIN

    def shard_list(self) -> list[tuple[str, str, str, str]]:
        """(role, task, split, path) of every shard read; a missing split is a DataError with the fix."""
        items = [(TRAIN, t, "train", str(p)) for t in self.train for p in shards(self.processed, t, "train")]
        items += [(EVAL, t, s, str(p)) for t, s in self.evals for p in shards(self.processed, t, s)]
        return items

    def examples(self) -> dict[tuple[str, str], int]:
        """(task, split) -> examples, read from the shards' footers."""
        pairs = [(t, "train") for t in self.train] + list(self.evals)
        return {(t, s): sum(shard_rows(p) for p in shards(self.processed, t, s)) for t, s in pairs}


def make_job(task_names: Sequence[str], processed: str | Path, out: str | Path, n: int = NGRAM,
             common_share: float = COMMON_SHARE, common_min: int = COMMON_MIN,
             train_tasks: Sequence[str] | None = None, splits: Sequence[str] = EVAL_SPLITS) -> ContaminationJob:
    """The job for `task_names` (already resolved): the training splits of those that have one (or of
    `train_tasks`), the evaluation `splits` (validation, test) of every one that has them."""
    unknown = [s for s in splits if s not in EVAL_SPLITS]
    if unknown or not splits:
        raise ConfigError(f"contamination: evaluation split(s) {', '.join(unknown) or '(none)'}; use "
                          f"{' and/or '.join(EVAL_SPLITS)}")
    if n < 1 or common_min < 1 or not 0 < common_share <= 1:
        raise ConfigError(f"contamination: --ngram and --common-min must be >= 1 and --common-share in (0, 1] "
                          f"(got {n}, {common_min}, {common_share})")
    for what, path in (("processed directory", processed), ("output directory", out)):
        if "://" in str(path):
            raise ConfigError(f"{what} {path}: URLs are not supported; use a filesystem path shared by the "
                              "driver and the workers")
    train = [t for t in (train_tasks if train_tasks is not None else task_names) if "train" in get_task(t).splits]
    evals = [(t, s) for t in task_names for s in EVAL_SPLITS if s in splits and s in get_task(t).splits]
    if not train:
        raise ConfigError(f"none of the tasks {', '.join(task_names)} has a training split to compare against")
    if not evals:
        raise ConfigError(f"none of the tasks {', '.join(task_names)} has a validation or test split to check")
    return ContaminationJob(processed=Path(processed), out=Path(out), train=list(train), evals=evals, n=n,
                            common_share=common_share, common_min=common_min)


def build(p: beam.Pipeline, items: Sequence[tuple[str, str, str, str]], thresholds: dict[str, int], n: int,
          parts_dir: str) -> None:
    """Add the contamination transforms to `p` (see the module docstring)."""
    hashed = (p
              | "Shards" >> beam.Create(list(items))
              | "Reshuffle" >> beam.Reshuffle()
              | "Hash" >> beam.ParDo(HashShard(n)).with_outputs(EVAL, main=TRAIN))
    train = (hashed[TRAIN]
             | "CountTrain" >> beam.CombinePerKey(sum)
             | "ByHash" >> beam.Map(lambda kv: (kv[0][0], (kv[0][1], kv[1]))))
    _ = ({TRAIN: train, EVAL: hashed[EVAL]}
         | "Join" >> beam.CoGroupByKey()
         | "Match" >> beam.ParDo(Match(thresholds))
         | "Distinct" >> beam.Distinct()
         | "BySplit" >> beam.Map(_match_key)
         | "GroupSplit" >> beam.GroupByKey()
         | "WritePart" >> beam.ParDo(WritePart(parts_dir)))


@dataclass
class ContaminationResult:
    matrix: dict  # contamination.json
    counters: dict[str, int]
    seconds: float
    out: Path


def run(job: ContaminationJob, cfg: PrepareConfig, beam_args: Sequence[str] = ()) -> ContaminationResult:
    """Run the job on the runner of `cfg` (prepare.runner / beam_options, then `beam_args`) and swap its
    output folder into place; nothing under ``job.out`` changes when it fails."""
    items = job.shard_list()
    examples = job.examples()
    thresholds = {t: common_threshold(examples[(t, "train")], job.common_share, job.common_min) for t in job.train}
    options = beam_options.pipeline_options(cfg, beam_args)
    start = time.perf_counter()
    results: list = []
    LOG.info("contamination: %d evaluation split(s) against the training data of %d task(s), %d shards "
             "(runner %s) -> %s", len(job.evals), len(job.train), len(items), beam_options.runner_name(options), job.out)

    def fill(tmp: Path) -> None:
        parts = tmp / "parts"
        parts.mkdir()
        with beam_options.job_runner(options) as (runner, _bins):
            p = beam.Pipeline(runner=runner, options=options)
            build(p, items, thresholds, job.n, str(parts))
            results.append(beam_options.run_pipeline(p))
        found = {}
        for path in sorted(parts.glob("*.json")):
            part = json.loads(path.read_text(encoding="utf-8"))
            found[(part["task"], part["split"])] = part["cells"]
            path.unlink()
        parts.rmdir()
        matrix, ids = assemble(job, examples, thresholds, found)
        write_json(tmp / MATRIX_FILE, matrix)
        write_json(tmp / IDS_FILE, ids)
        results.append(matrix)

    replace_dir(job.out, fill)
    counters = beam_options.counters(results[0], NAMESPACE)
    return ContaminationResult(matrix=results[1], counters=counters, seconds=time.perf_counter() - start,
                               out=job.out)


def assemble(job: ContaminationJob, examples: dict[tuple[str, str], int], thresholds: dict[str, int],
             found: dict[tuple[str, str], dict]) -> tuple[dict, dict]:
    """(contamination.json, contaminated_ids.json) from the parts the pipeline wrote."""
    matrix: dict[str, Any] = {}
    ids: dict[str, Any] = {}
    for task, split in job.evals:
        total = examples[(task, split)]
        cells = found.get((task, split), {})
        row = {}
        for t in job.train:
            cell = cells.get(t)
            counts = {k: len(cell[k]) if cell else 0 for k in CELL_KEYS}
            row[t] = {k: {"examples": v, "share": round(v / total, 6) if total else 0.0} for k, v in counts.items()}
        flagged = sorted({i for c in cells.values() for i in c["any"]})
        by_field = {f: sorted({i for c in cells.values() for i in c[f]}) for f in (*FIELDS, "ngram")}
        key = split_key(task, split)
        matrix[key] = {"task": task, "split": split, "examples": total, "flagged": len(flagged),
                       "flagged_share": round(len(flagged) / total, 6) if total else 0.0,
                       "by_field": {f: len(v) for f, v in by_field.items()}, "train": row}
        ids[key] = {"any": flagged, "by_field": by_field,
                    "by_train_task": {t: {k: c[k] for k in (*FIELDS, "any", "ngram")} for t, c in sorted(cells.items())
                                      if c["any"]}}
    doc = {"format": FORMAT, "n": job.n, "common_share": job.common_share, "common_min": job.common_min,
           "train_tasks": list(job.train), "train_examples": {t: examples[(t, "train")] for t in job.train},
           "common_thresholds": thresholds, "eval_splits": [split_key(t, s) for t, s in job.evals],
           "matrix": matrix}
    return doc, {"format": FORMAT, "n": job.n, "splits": ids}


def summary(result: ContaminationResult) -> str:
    """The end-of-run table: per evaluation split, examples and the share flagged by field."""
    rows = [("split", "examples", "context", "question", "answer", "any", f"{result.matrix['n']}-gram")]
    for key, r in result.matrix["matrix"].items():
        n = r["examples"] or 1
        rows.append((key, f"{r['examples']:,}", *(f"{100 * r['by_field'][f] / n:.1f}%" for f in FIELDS),
                     f"{100 * r['flagged'] / n:.1f}%", f"{100 * r['by_field']['ngram'] / n:.1f}%"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    flagged = sum(r["flagged"] for r in result.matrix["matrix"].values())
    return "\n".join(lines) + (f"\n{flagged:,} evaluation example(s) overlap training data; "
                               f"{result.out}/{MATRIX_FILE} in {result.seconds:.1f} s")
