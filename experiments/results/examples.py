"""Per-example records: the best checkpoint's per-example validation statistics of a run, with each example's
cluster, so that a page's interval can be the clustered two-level bootstrap (eval/clustered.py) and not the
interval over the seeds alone.

One gzip JSON per run, docs/results/records/examples/<record>/<run name>.json.gz, made where the run was made
(experiments/single_task.py writes <run>/examples.json.gz at each new best model; experiments/table3.py
converts `deca evaluate`'s predictions of the best model) and copied beside the record by
`python -m experiments.results.runs`. A run's record:

    {"version": 1, "run": name, "iteration": the best model's, "split": "validation",
     "tasks": {task: {"metric", "kind" (eval.examples), "n", "columns", "headline" (the metric of `values`),
                      "ids_sha256" (of the example ids in order: runs compared must share their examples),
                      "cluster_by" ("paragraph", "sentence", "dialogue", "schema" or null),
                      "clusters" (each example's cluster as a code 0..C-1, in order of first appearance; null
                                  when every example is its own, as SST's sentences are),
                      "values" (the statistics, examples x columns, flattened row by row; whole numbers as
                                integers, others to 3 decimals)}}}

An EM task's 2,183 examples take about 1 KB compressed (scores of 0 or 100), an nF1 task's a few KB.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from eval.clustered import cluster_codes, cluster_unit, context_clusters
from eval.examples import KINDS, metric_value
from eval.stats import Sample
from experiments.results import records

VERSION = 1
FILE = "examples.json.gz"  # in a run folder
DIR = records.RECORDS / "examples"
DIGITS = 3


def ids_digest(ids: Sequence[str]) -> str:
    return hashlib.sha256("\n".join(map(str, ids)).encode()).hexdigest()[:16]


def _compact(values: np.ndarray) -> list:
    flat = np.round(np.asarray(values, dtype=float).ravel(), DIGITS)
    return [int(x) if float(x).is_integer() else float(x) for x in flat]


def task_record(task: str, metric: str, rows: Sequence[Mapping], examples: Mapping) -> dict:
    """One task's entry from its scored `rows` (id and context, in the order scored) and `examples`
    ({"kind", "values"}: eval.api.score_task(..., examples=True)'s)."""
    values = np.asarray(examples["values"], dtype=float).reshape(len(rows), -1)
    ids = [str(r["id"]) for r in rows]
    found = context_clusters(task, ids, [r.get("context", "") for r in rows])
    return {"metric": metric, "kind": examples["kind"], "n": len(rows), "columns": values.shape[1],
            "headline": round(metric_value(examples["kind"], values), 4), "ids_sha256": ids_digest(ids),
            "cluster_by": cluster_unit(task) if found is not None else None,
            "clusters": None if found is None else cluster_codes(found, len(ids)).tolist(),
            "values": _compact(values)}


def run_record(name: str, iteration: int | None, tasks: Mapping[str, dict]) -> dict:
    return {"version": VERSION, "run": name, "iteration": iteration, "split": "validation", "tasks": dict(tasks)}


def write(path: Path, record: dict) -> Path:
    """`record` gzipped to `path` (a temporary file renamed into place: a stopped run leaves the last whole one;
    no timestamp inside, so the same record gives the same bytes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(gzip.compress(json.dumps(record, separators=(",", ":")).encode(), mtime=0))
    os.replace(tmp, path)
    return path


def check(record: dict, origin: str) -> dict:
    """`record` when well formed, else a RecordError naming `origin`, the task and what to do."""
    if record.get("version") != VERSION or not isinstance(record.get("tasks"), dict):
        raise records.RecordError(f"{origin}: not a per-example record of version {VERSION} (no 'tasks'); "
                                  "rewrite it with experiments/single_task.py or experiments/table3.py")
    for task, entry in record["tasks"].items():
        n, columns = entry.get("n"), entry.get("columns")
        if entry.get("kind") not in KINDS or len(entry.get("values") or ()) != (n or 0) * (columns or 0):
            raise records.RecordError(f"{origin}: task {task}: kind {entry.get('kind')!r} or {len(entry.get('values') or ())} "
                                      f"values for n={n} x columns={columns} do not fit; rewrite the record")
        if entry.get("clusters") is not None and len(entry["clusters"]) != n:
            raise records.RecordError(f"{origin}: task {task}: {len(entry['clusters'])} cluster ids for {n} examples")
    return record


def read(path: Path) -> dict:
    try:
        return check(json.loads(gzip.decompress(path.read_bytes()).decode("utf-8")), str(path))
    except (OSError, ValueError, EOFError) as exc:
        if isinstance(exc, records.RecordError):
            raise
        raise records.RecordError(f"{path}: unreadable per-example record ({exc}); delete it and rerun the run's "
                                  "evaluation, or restore it from git") from None


def load(record_name: str, run: str | None, folder: Path | None = None) -> dict | None:
    """The per-example record of `run` in `record_name`'s folder (default docs/results/records/examples/), or None
    where the run kept none (or has no name). A run named by a path (zero-shot's models) is looked up with its
    slashes as "__"."""
    if not run:
        return None
    path = (folder or DIR) / record_name / f"{run.replace('/', '__')}.json.gz"
    return read(path) if path.is_file() else None


def matrix(entry: Mapping) -> np.ndarray:
    return np.asarray(entry["values"], dtype=float).reshape(entry["n"], entry["columns"])


def side(found: Sequence[dict | None], task: str) -> tuple[Sample | None, list[int] | None]:
    """(the runs' Sample of `task`, each example's cluster) when every run has a per-example record of `task`
    over the same examples; (None, None) when any run lacks one (the page then says "seed-only interval")."""
    entries = [None if r is None else r["tasks"].get(task) for r in found]
    if not entries or any(e is None for e in entries):
        return None, None
    if len({e["ids_sha256"] for e in entries}) > 1 or len({e["kind"] for e in entries}) > 1:
        raise records.RecordError(f"per-example records of {task} over different examples or metrics "
                                  f"(runs {', '.join(r['run'] for r in found)}): rerun them on the same validation rows")
    return Sample.of(entries[0]["kind"], *(matrix(e) for e in entries)), entries[0]["clusters"]


def same_examples(a: Sequence[dict | None], b: Sequence[dict | None], task: str) -> bool:
    """Whether both sides' runs all scored `task` on the same examples (a paired comparison is possible)."""
    digests = {r["tasks"][task]["ids_sha256"] for r in (*a, *b) if r is not None and task in r["tasks"]}
    return len(digests) <= 1


def from_evaluation(name: str, metrics: Path, predictions: Path) -> dict:
    """A run's record from `deca evaluate`'s output: metrics.json (the checkpoint's iteration, each task's
    headline metric) and predictions/<task>.jsonl (each example's id, context and ``stats``)."""
    from eval.examples import kind_of

    doc = json.loads(metrics.read_text(encoding="utf-8"))
    tasks = {}
    for task, scored in doc["tasks"].items():
        path = predictions / f"{task}.jsonl"
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if any("stats" not in r for r in rows):
            raise records.RecordError(f"{path}: examples without 'stats' (a metric without per-example statistics, "
                                      "or predictions written before `deca evaluate` kept them)")
        metric = scored["headline_metric"]
        tasks[task] = task_record(task, metric, rows, {"kind": kind_of(metric), "values": [r["stats"] for r in rows]})
    return run_record(name, doc.get("iteration"), tasks)
