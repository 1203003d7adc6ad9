"""Scoring prediction files against the processed gold: the work behind `deca score`.

Gold rows come from ``<processed>/<task>/<split>/part-*.parquet`` (deca.schema); predictions are JSON
lines ``{"id": ..., "prediction": ...}`` in ``<dir>/<task>.jsonl``. Results are written as
``metrics.json`` for `dvc metrics` and can be logged to the active MLflow run.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Mapping, Sequence

from deca.errors import DataError
from deca.io import json_line, write_json
from deca.metric_logging import MetricLogger, active_run_logger, finite
from deca.registry import all_tasks, get_task, resolve_tasks
from deca.schema import read_split
from deca.text import SURROGATE_FIX, lone_surrogate, may_hold_surrogates
from eval.api import PredictionMismatch, decascore, metric_values, score_task
from eval.metrics.registry import ScoreOptions
from eval.sources import metrics_entry, source_values
from eval.stats import Sample, estimate

log = logging.getLogger(__name__)
GOLD_COLUMNS = ["id", "answer", "answers", "gold"]


def read_predictions(path: str | Path) -> dict[str, str]:
    """id -> prediction from a JSON-lines file; bad lines raise DataError naming the line and the fix."""
    path = Path(path)
    out: dict[str, str] = {}
    first_line: dict[str, int] = {}
    try:
        f = open(path, "rb")  # decoded line by line: a bad byte is reported on its own line
    except FileNotFoundError:
        raise DataError(path, "predictions file not found", fix="write predictions with `deca evaluate` "
                        "or give the right --predictions path") from None
    with f:
        for lineno, raw in enumerate(f, start=1):
            line = decode_line(raw, path, lineno)
            if not line.strip():
                continue
            pid, prediction = parse_prediction(line, path, lineno)
            if pid in out:
                raise DataError(path, f"id {pid!r} predicted twice (first on line {first_line[pid]})",
                                line=lineno, fix="keep one prediction per id")
            out[pid] = prediction
            first_line[pid] = lineno
    return out


def parse_prediction(line: str, path: Path, lineno: int) -> tuple[str, str]:
    """(id, prediction) of one line of a predictions file; a DataError naming the line and the fix."""
    fix = 'each line must be a JSON object {"id": "...", "prediction": "..."}'
    record = json_line(line, path, lineno, fix)
    if not isinstance(record, dict) or "id" not in record or "prediction" not in record:
        raise DataError(path, "missing 'id' or 'prediction'", line=lineno, fix=fix)
    pid, prediction = record["id"], record["prediction"]
    if not isinstance(pid, (str, int)) or isinstance(pid, bool):
        raise DataError(path, f"'id' must be a string, got {pid!r:.60}", line=lineno, fix=fix)
    if not isinstance(prediction, str):
        raise DataError(path, f"'prediction' must be a string, got {prediction!r:.60}", line=lineno, fix=fix)
    problem = lone_surrogate({"id": pid, "prediction": prediction}) if may_hold_surrogates(line) else None
    if problem:
        raise DataError(path, problem, line=lineno, fix=SURROGATE_FIX)
    return str(pid), prediction


def decode_line(raw: bytes, path: Path, lineno: int) -> str:
    """One line of a predictions file as text; a DataError naming the file and line when it is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(path, f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1} of the line: "
                              f"{exc.reason})", line=lineno,
                        fix="write the file as UTF-8 (`deca evaluate` and `deca predict` do), or convert it, e.g. "
                            "`iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8`") from None


def read_gold(processed_dir: str | Path, task: str, split: str) -> list[dict[str, Any]]:
    """The gold rows of one task split (the columns the metrics need)."""
    return read_split(processed_dir, task, split, columns=GOLD_COLUMNS).to_pylist()


def find_wikisql_db(split: str, raw_dir: str | Path, task: str = "wikisql") -> Path | None:
    """The SQLite database next to the split's WikiSQL ``<split>.jsonl`` under `raw_dir`, if present."""
    tasks = all_tasks()
    if task not in tasks or split not in tasks[task].splits:
        return None
    for file in tasks[task].files(split, raw_dir):
        if file.name.endswith(".jsonl") and not file.name.endswith(".tables.jsonl"):
            db = file.with_suffix(".db")
            if db.is_file():
                return db
    return None


def score_file(task: str, split: str, predictions_path: str | Path, processed_dir: str | Path,
               options: ScoreOptions | None = None) -> dict:
    """Score one predictions file; the result is `eval.api.score_task`'s, plus the split."""
    predictions = read_predictions(predictions_path)
    gold = read_gold(processed_dir, task, split)
    try:
        result = score_task(task, predictions, gold, options=options)
    except PredictionMismatch as exc:
        raise DataError(predictions_path, str(exc), fix=f"predict every id of {task}/{split} and nothing else") from None
    return {"task": result["task"], "split": split, "n": result["n"], "metrics": result["metrics"],
            "headline": result["headline"]}


def score_dir(split: str, predictions_dir: str | Path, processed_dir: str | Path,
              tasks: Sequence[str] | None = None, options_for: Any = None) -> dict:
    """Score every ``<dir>/<task>.jsonl`` (restricted to `tasks` selectors if given) and add the decaScore.

    `options_for(task) -> ScoreOptions` gives per-task options. Files named after no registered task are
    an error (a misspelt file name must not silently leave a task out).
    """
    predictions_dir = Path(predictions_dir)
    if not predictions_dir.is_dir():
        raise DataError(predictions_dir, "predictions directory not found",
                        fix="give --predictions-dir a directory holding <task>.jsonl files")
    files = {p.name[: -len(".jsonl")]: p for p in sorted(predictions_dir.glob("*.jsonl"))}
    registered = all_tasks()
    unknown = sorted(name for name in files if name not in registered)
    if unknown:
        raise DataError(predictions_dir / f"{unknown[0]}.jsonl",
                        f"{len(unknown)} prediction file(s) named after no registered task: {', '.join(unknown)}",
                        fix="name each file <task>.jsonl after a task of `deca ls`, or move it away")
    selected = resolve_tasks(list(tasks)) if tasks else list(registered)
    present = [t for t in registered if t in files and t in selected]
    if not present:
        raise DataError(predictions_dir, f"no <task>.jsonl file for any selected task ({', '.join(selected)})",
                        fix="write predictions first (`deca evaluate`)")
    results = {}
    for task in present:
        opts = options_for(task) if options_for else None
        results[task] = score_file(task, split, files[task], processed_dir, options=opts)
        log.info("%s/%s: %s = %.4f (n=%d)", task, split, results[task]["headline"]["name"],
                 results[task]["headline"]["value"], results[task]["n"])
    summary = decascore(results)
    return {"split": split, **summary, "results": results}


def metrics_document(scored: Mapping[str, Any]) -> dict:
    """The flat-ish JSON written for `dvc metrics`: per task every metric plus its headline value, and
    the headline's 95% bootstrap ``interval`` (and ``decascore_interval``) when computed (`add_intervals`), and
    a ``source`` object (Figure 3: shares of answer tokens per source, eval.sources) when the result has one."""
    results = scored["results"] if "results" in scored else {scored["task"]: scored}
    doc: dict[str, Any] = {"split": scored["split"]}
    if "decascore" in scored:
        doc.update(decascore=scored["decascore"], partial=scored["partial"], tasks_scored=scored["tasks"])
        if "decascore_interval" in scored:
            doc["decascore_interval"] = scored["decascore_interval"]
    doc["tasks"] = {
        task: {"n": r["n"], "headline": r["headline"]["value"], "headline_metric": r["headline"]["name"],
               **({"interval": r["interval"]} if "interval" in r else {}), **r["metrics"], **({"source": metrics_entry(r["sources"])} if r.get("sources") else {})}
        for task, r in results.items()
    }
    return doc


def add_intervals(scored: dict, replicates: int = 1000, seed: int = 0) -> dict:
    """Give every result that carries per-example statistics (``examples``, eval.api.score_task) its 95%
    bootstrap ``interval`` [low, high], and the scored split a ``decascore_interval`` (eval.stats); the
    statistics themselves are dropped from the results. Returns `scored`."""
    results = scored["results"]
    samples = {t: Sample.of(r["examples"]["kind"], r["examples"]["values"]) for t, r in results.items()
               if r.get("examples")}
    for r in results.values():
        r.pop("examples", None)
    if not samples:
        return scored
    found = estimate(samples, replicates=replicates, seed=seed)
    for task in samples:
        results[task]["interval"] = [found[task].low, found[task].high]
    if "decascore" in found and set(scored.get("tasks", [])) <= set(samples):
        scored["decascore_interval"] = [found["decascore"].low, found["decascore"].high]
    return scored


def write_metrics(path: str | Path, scored: Mapping[str, Any]) -> Path:
    """Write `metrics_document(scored)` atomically to `path`."""
    return write_json(path, metrics_document(scored))


def log_scores(scored: Mapping[str, Any], logger: MetricLogger | None = None, step: int = 0) -> str:
    """Log the scores (names from eval.api.metric_values) with `logger`, by default into the active MLflow
    run or $MLFLOW_RUN_ID (deca.metric_logging.active_run_logger); returns the run id when MLflow."""
    results = scored["results"] if "results" in scored else {scored["task"]: scored}
    logger = logger or active_run_logger()
    values = {**metric_values(scored["split"], results), **finite(source_values(scored["split"], results))}
    if "decascore" not in scored:  # one task scored: no decaScore of its own
        values.pop(f"{scored['split']}/decascore", None)
    logger.log_metrics(values, step)
    return getattr(logger, "run_id", "")


def task_options(split: str, raw_dir: str | Path | None, processes: int | None, wikisql_db: str | None,
                 progress: bool) -> Any:
    """Per-task ScoreOptions: the WikiSQL database is looked up under `raw_dir` unless given."""

    def options_for(task: str) -> ScoreOptions:
        db = wikisql_db
        if db is None and raw_dir is not None and get_task(task).metric == "lfem":
            found = find_wikisql_db(split, raw_dir, task)
            db = str(found) if found else None
        return ScoreOptions(processes=processes, wikisql_db=db, progress=progress)

    return options_for
