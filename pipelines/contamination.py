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

    Create[shards] -> Reshuffle -> HashShard --train--> (bucket, (T, sorted hashes, examples of the shard
                                                         holding each))
                                             --eval---> (bucket, (task, split, ids, sorted hashes, example,
                                                         field and whether the text is short))
    Flatten -> GroupByKey(bucket) -> Match (numpy: per training task, shards' counts summed, eval hashes
      looked up with searchsorted; common or not) -> GroupByKey((task, split)) -> WritePart
      (<staging>/parts/<task>@<split>.json)

A bucket is the top log2(BUCKETS) bits of the hash (64 buckets): what crosses the shuffle is shards x
buckets arrays, not one element per hash, and hashing is one blake2b call per n-gram with the digests
read as one numpy array per text. The hashing, the common threshold and the numpy operations on sorted hash
arrays (buckets, counts per example, merging shards) are in pipelines/contamination_hashes.py; this module
holds the Beam transforms, the job and its output.

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

import json
import logging
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402
import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from apache_beam.metrics import Metrics  # noqa: E402

from deca.config import PrepareConfig  # noqa: E402
from deca.contamination import FORMAT, IDS_FILE, MATRIX_FILE, load_flagged, split_key  # noqa: E402,F401
from deca.errors import ConfigError  # noqa: E402
from deca.io import replace_dir, write_json, write_text  # noqa: E402
from deca.registry import get_task  # noqa: E402
from deca.schema import bad_shard, shard_rows, shards  # noqa: E402
from pipelines.contamination_hashes import (  # noqa: E402
    COMMON_MIN, COMMON_SHARE, NGRAM, bucket_bounds, common_threshold, example_counts, hash_array, merge_train)

LOG = logging.getLogger(__name__)
NAMESPACE = "deca.contamination"
FIELDS = ("context", "question", "answer")
EVAL_SPLITS = ("validation", "test")
# a matrix cell: examples overlapping by field, in any field, by a real n-gram (a text of >= n tokens, not
# common), and matching only common texts
CELL_KEYS = (*FIELDS, "any", "ngram", "common_only")


# ---- what runs on the workers --------------------------------------------------------------------------

TRAIN, EVAL = "train", "eval"
COLUMNS = ["id", "context_tokens", "question_tokens", "answer_tokens"]
BUCKETS = 64  # hash buckets: the shuffle moves shards x buckets elements, each a sorted array of hashes


def read_shard(path: str, batch_size: int = 2048) -> Iterator[dict]:
    """The id and token columns of one processed shard, batch by batch as Python lists; a DataError naming
    the file when it is not readable."""
    try:
        reader = pq.ParquetFile(path)
        batches = list(reader.iter_batches(batch_size=batch_size, columns=COLUMNS))
    except (pa.ArrowException, OSError, ValueError, KeyError) as exc:
        raise bad_shard(path, exc) from None
    for batch in batches:
        yield batch.to_pydict()


class HashShard(beam.DoFn):
    """One processed shard -> per hash bucket, its hashes as sorted arrays: for a training shard (bucket,
    (TRAIN, task, hashes, examples of the shard holding each)); for an evaluation shard (bucket, (EVAL,
    task, split, ids, hashes, example index into ids, field * 2 + short)), every (hash, example, field) once."""

    def __init__(self, n: int, buckets: int = BUCKETS):
        self.n, self.buckets = n, buckets
        self.examples = Metrics.counter(NAMESPACE, "examples")
        self.train_ngrams = Metrics.counter(NAMESPACE, "train.ngrams")
        self.eval_ngrams = Metrics.counter(NAMESPACE, "eval.ngrams")

    def process(self, item: tuple[str, str, str, str]) -> Iterator[Any]:
        role, task, split, path = item
        ids: list[str] = []
        hashes, owners, codes = [], [], []
        for rows in read_shard(path):
            self.examples.inc(len(rows["id"]))
            columns = [rows[f"{f}_tokens"] for f in FIELDS]
            for i, ident in enumerate(rows["id"]):
                for f, col in enumerate(columns):
                    h, short = hash_array(col[i], self.n)
                    if role == EVAL:
                        h = np.unique(h)
                        codes.append(np.full(len(h), 2 * f + short, np.uint8))
                    hashes.append(h)
                    owners.append(np.full(len(h), len(ids), np.int64))
                ids.append(str(ident))
        h = np.concatenate(hashes) if hashes else np.empty(0, np.uint64)
        e = np.concatenate(owners) if owners else np.empty(0, np.int64)
        if role == TRAIN:
            yield from self._train(task, h, e)
        else:
            yield from self._eval(task, split, ids, h, e, np.concatenate(codes) if codes else np.empty(0, np.uint8))

    def _train(self, task: str, h: np.ndarray, e: np.ndarray) -> Iterator[Any]:
        hashes, counts = example_counts(h, e)  # examples holding the hash, not occurrences
        self.train_ngrams.inc(len(hashes))
        for b, lo, hi in bucket_bounds(hashes, self.buckets):
            yield b, (TRAIN, task, hashes[lo:hi], counts[lo:hi])

    def _eval(self, task: str, split: str, ids: list[str], h: np.ndarray, e: np.ndarray,
              codes: np.ndarray) -> Iterator[Any]:
        self.eval_ngrams.inc(len(h))
        order = np.argsort(h, kind="stable")
        h, e, codes = h[order], e[order], codes[order]
        for b, lo, hi in bucket_bounds(h, self.buckets):
            used, local = np.unique(e[lo:hi], return_inverse=True)
            yield beam.pvalue.TaggedOutput(EVAL, (b, (EVAL, task, split, [ids[j] for j in used.tolist()], h[lo:hi],
                                                      local.astype(np.int64), codes[lo:hi])))


class Match(beam.DoFn):
    """(bucket, [training and evaluation arrays]) -> ((task, split), {T: {field/ngram/common: ids}}) for
    every evaluation split with an example matching training task T in the bucket: by field the examples
    with a match that is not common for T, ngram those of them in a text of >= n tokens, common those with a
    common match."""

    def __init__(self, thresholds: dict[str, int]):
        self.thresholds = thresholds
        self.matched = Metrics.counter(NAMESPACE, "matched_hashes")
        self.common = Metrics.counter(NAMESPACE, "common_hashes")

    def process(self, kv) -> Iterator[tuple]:
        _, values = kv
        parts: dict[str, list] = {}
        evals = []
        for v in values:
            if v[0] == TRAIN:
                parts.setdefault(v[1], []).append((v[2], v[3]))
            else:
                evals.append(v[1:])
        if not parts or not evals:
            return
        tables = {t: merge_train(parts[t]) for t in sorted(parts)}
        eval_hashes = np.unique(np.concatenate([e[3] for e in evals]))
        train_hashes = np.unique(np.concatenate([h for h, _ in tables.values()]))
        self.matched.inc(len(np.intersect1d(eval_hashes, train_hashes, assume_unique=True)))
        for t, (h, c) in tables.items():
            self.common.inc(int(np.count_nonzero(np.isin(h, eval_hashes, assume_unique=True) & (c >= self.thresholds[t]))))
        out: dict[tuple[str, str], dict] = {}
        for task, split, ids, h, ex, codes in evals:  # a split's shards: their ids together
            for t, table in tables.items():
                cell = self._cell(table, self.thresholds[t], ids, h, ex, codes)
                if cell:
                    kinds = out.setdefault((task, split), {}).setdefault(t, {})
                    for name, found in cell.items():
                        kinds.setdefault(name, set()).update(found)
        for key in sorted(out):
            yield key, {t: {name: sorted(v) for name, v in kinds.items()} for t, kinds in out[key].items()}

    @staticmethod
    def _cell(table: tuple[np.ndarray, np.ndarray], threshold: int, ids: list[str], h: np.ndarray, ex: np.ndarray,
              codes: np.ndarray) -> dict[str, list[str]] | None:
        """One evaluation shard's bucket against one training task: the ids by kind of match, or None."""
        th, tc = table
        pos = np.minimum(np.searchsorted(th, h), len(th) - 1)
        hit = th[pos] == h
        if not hit.any():
            return None
        common = hit & (tc[pos] >= threshold)
        real = hit & ~common
        field = codes >> 1
        masks = {name: real & (field == f) for f, name in enumerate(FIELDS)}
        masks.update(ngram=real & ((codes & 1) == 0), common=common)
        return {name: [ids[j] for j in np.unique(ex[m]).tolist()] for name, m in masks.items()}


class WritePart(beam.DoFn):
    """((task, split), [{T: {field/ngram/common: ids}} per bucket]) -> <parts>/<task>@<split>.json: per
    training task, the ids by field."""

    def __init__(self, parts_dir: str):
        self.parts_dir = parts_dir
        self.overlaps = Metrics.counter(NAMESPACE, "overlapping_examples")

    def process(self, kv) -> Iterator[str]:
        (task, split), found = kv
        cells: dict[str, dict[str, set]] = {}
        for by_task in found:
            for t, kinds in by_task.items():
                cell = cells.setdefault(t, {name: set() for name in (*FIELDS, "ngram", "common")})
                for name, ids in kinds.items():
                    cell[name].update(ids)
        out, flagged = {}, set()
        for t in sorted(cells):
            cell = cells[t]
            any_ids = cell["context"] | cell["question"] | cell["answer"]
            flagged |= any_ids
            out[t] = {**{f: sorted(cell[f]) for f in FIELDS}, "any": sorted(any_ids), "ngram": sorted(cell["ngram"]),
                      "common_only": sorted(cell["common"] - any_ids)}
        self.overlaps.inc(len(flagged))
        path = Path(self.parts_dir) / f"{task}@{split}.json"
        write_text(path, json.dumps({"task": task, "split": split, "cells": out}, sort_keys=True))
        yield str(path)


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
          parts_dir: str, buckets: int = BUCKETS) -> None:
    """Add the contamination transforms to `p` (see the module docstring); `buckets` a power of two."""
    if buckets < 1 or buckets & (buckets - 1):
        raise ConfigError(f"contamination: hash buckets must be a power of two (got {buckets})")
    hashed = (p
              | "Shards" >> beam.Create(list(items))
              | "Reshuffle" >> beam.Reshuffle()
              | "Hash" >> beam.ParDo(HashShard(n, buckets)).with_outputs(EVAL, main=TRAIN))
    _ = ((hashed[TRAIN], hashed[EVAL])
         | "Both" >> beam.Flatten()
         | "ByBucket" >> beam.GroupByKey()
         | "Match" >> beam.ParDo(Match(thresholds))
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
