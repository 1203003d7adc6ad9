"""Evaluating a trained model: decode a split of every task greedily, score it, write the results.

`evaluate(params, run=..., checkpoint=...)` is the work behind `deca evaluate` (infer/evaluate_cli.py):
the checkpoint (a run's best/model.pt, or any file), the tasks with the split, greedy answers, scores
(eval.api), which source answers each token (the paper's Figure 3: eval.sources, from the switch weights
that greedy decoding returns), then the files (each written under a temporary name, all renamed into place
together: a failed run, a full disk, leaves no partial output and the previous results as they were) and, for
a run, its MLflow run: metrics under ``<split>/<task>/<metric>`` and ``<split>/<task>/source/...`` at the
checkpoint's iteration (deca.metric_logging) and the tag ``evaluated.<split>`` naming that iteration (so
`deca compare` prefers these values).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from tqdm import tqdm

from deca.checks import EVALUATED_SPLITS, check_params
from deca.contamination import load_flagged
from deca.errors import ConfigError, DataError
from deca.io import check_writable, file_sha256, write_json, write_text
from deca.metric_logging import MetricLogger, MLflowLogger, TrackingServerDown, check_server
from deca.registry import get_task, resolve_tasks
from deca.runs import resolve_checkpoint
from deca.schema import read_split
from deca.staging import Staging
from eval.api import check_metrics, decascore, score_task
from eval.clean import clean_scores
from eval.curves import plot_run
from eval.report import bar_chart, figure3_chart, markdown, write_plots
from eval.score import add_intervals, log_scores, metrics_document, task_options
from eval.sources import summarize
from infer.limits import InputLimits
from infer.predict import check_answer_length, pick_device
from mqan.checkpoint import load_model
from mqan.decode import decode
from mqan.precision import DECODING, check as check_precision, resolve as resolve_precision

log = logging.getLogger("deca.evaluate")

READ_COLUMNS = ["id", "task", "context", "question", "context_tokens", "question_tokens", "answer_tokens", "answer",
                "answers", "gold"]
EXAMPLES_IN_REPORT = 3  # per task
MODEL_FILE = "model.json"  # in a predictions directory: the checkpoint that made it (`made_by`)
Record = Mapping[str, Any]  # one line of <task>.jsonl: id, prediction, context, question, answer, stats


def select_tasks(selectors: Sequence[str], split: str) -> tuple[list[str], dict[str, str]]:
    """(tasks to evaluate, {task: reason} for the ones skipped because they lack the split)."""
    chosen, skipped = [], {}
    for name in resolve_tasks(list(selectors)):
        if split in get_task(name).splits:
            chosen.append(name)
        else:
            skipped[name] = f"no {split} split"
    return chosen, skipped


def read_rows(processed_dir: str, task: str, split: str, max_examples: int | None) -> list[dict]:
    """The processed rows of one task split (the first `max_examples`)."""
    table = read_split(processed_dir, task, split, columns=READ_COLUMNS)
    if max_examples is not None:
        table = table.slice(0, max_examples)
    return table.to_pylist()


def check_config(params, origin: Mapping[str, str] | None = None) -> None:
    """Refuse an evaluate section that cannot work, before anything is loaded (errors name where each value
    came from, `origin`: params.yaml's line, --set or the command's option; deca.config.read_params)."""
    ec = params.evaluate
    if ec.split not in EVALUATED_SPLITS:
        raise ConfigError(f"evaluate.split must be {' or '.join(EVALUATED_SPLITS)}, got {ec.split!r}")
    if ec.batch_size < 1 or (ec.max_examples is not None and ec.max_examples < 1):
        raise ConfigError("evaluate.batch_size and evaluate.max_examples must be positive")
    check_answer_length(ec.max_answer_length, "evaluate.max_answer_length")
    check_precision(ec.precision, "evaluate.precision", DECODING)
    check_params(params, origin, commands=["evaluate"])  # the rest, as `deca validate` runs it


def read_data(params, tasks: Sequence[str], skipped: dict[str, str]) -> dict[str, list[dict]]:
    """{task: rows} of the split to evaluate (tasks whose split is empty go to `skipped`); the rows of a custom
    task are held to the input limit of `deca predict` and `deca serve` (infer/limits.py)."""
    ec = params.evaluate
    data = {t: read_rows(params.data.processed_dir, t, ec.split, ec.max_examples) for t in tasks}
    for task in [t for t, rows in data.items() if not rows]:
        skipped[task] = f"empty {ec.split} split"
        del data[task]
    for task, rows in data.items():
        if get_task(task).module == "deca.custom_tasks":
            check_custom_rows(params, task, rows)
    return data


def check_custom_rows(params, task: str, rows: Sequence[dict], limits: InputLimits = InputLimits()) -> None:
    """A DataError naming the custom task's file and the example's id for the first example over the limit."""
    for row in rows:
        problems = limits.problems({"context": row["context"], "question": row["question"]})
        if problems:
            declared = params.custom_tasks.get(task)
            path = declared.files.get(params.evaluate.split, task) if declared else task
            field, message = problems[0]
            raise DataError(path, f"example {row['id']!r} of custom task {task!r}: {field}: {message}",
                            fix="shorten or drop that example (the limit is the one `deca predict` and `deca serve` "
                                "apply), then `deca prepare` it again")


def check_outputs(ec) -> None:
    """Refuse output folders that cannot be created or written before the model is loaded and anything is
    decoded (a WriteError naming the folder)."""
    check_writable(Path(ec.predictions_dir).parent, Path(ec.metrics_path).parent, ec.report_dir, ec.plots_dir)


def predict_and_score(params, model, vocab, data: dict[str, list[dict]], device, precision: str,
                      progress: bool) -> tuple[dict[str, list[Record]], dict]:
    """({task: [prediction records]}, the scored split: decaScore and per-task results with 95% intervals). Each
    record keeps the example's statistics of its task's headline metric (``stats``, eval.examples), so that
    `deca compare --runs-a/--runs-b` can resample them."""
    ec = params.evaluate
    options_for = task_options(ec.split, params.data.raw_dir, None, None, progress=False)
    predictions, results = {}, {}
    with tqdm(total=sum(map(len, data.values())), desc="decode", unit="ex", disable=not progress) as bar:
        for task, rows in data.items():
            bar.set_postfix_str(task)
            answers = decode(model, vocab, rows, ec.batch_size, ec.max_answer_length, device, bar=bar, weights=True,
                             precision=precision, cuda_graphs=ec.cuda_graphs)
            predictions[task] = [{"id": str(r["id"]), "prediction": a.text, "context": r["context"],
                                  "question": r["question"], "answer": r["answer"]} for r, a in zip(rows, answers)]
            res = score_task(task, {p["id"]: p["prediction"] for p in predictions[task]}, rows,
                             options=options_for(task), examples=True)
            if res["examples"]:
                for record, row in zip(predictions[task], res["examples"]["values"].tolist()):
                    record["stats"] = row
            results[task] = {"task": task, "split": ec.split, **{k: res[k] for k in ("n", "metrics", "headline")},
                             "examples": res["examples"], "sources": summarize([a.weights for a in answers])}
    return predictions, add_intervals({"split": ec.split, **decascore(results), "results": results})


def read_flagged(contamination: str | None) -> tuple[str, dict[str, set[str]]] | None:
    """(folder, ``<task>/<split>`` -> flagged ids) of `deca contamination`'s output, read before any decoding so
    that a broken one stops the evaluation at once (a DataError naming its file); None when there is no folder."""
    if not contamination or not Path(contamination).is_dir():
        if contamination:
            log.info("no contamination output in %s (`deca contamination`): no clean scores", contamination)
        return None

    return str(contamination), load_flagged(contamination)


def add_clean(scored: dict, predictions: Mapping[str, Sequence[Record]], data: Mapping[str, list[dict]],
              flagged: tuple[str, dict[str, set[str]]] | None, raw_dir: str | None = None) -> dict:
    """`scored` with ``clean``: each task's score and the decaScore on the examples the contamination output
    (read_flagged) does not flag (eval.clean); none when there is no such output."""
    if flagged is None:
        return scored

    source, ids = flagged
    by_id = {task: {p["id"]: p["prediction"] for p in records} for task, records in predictions.items()}
    options_for = task_options(scored["split"], raw_dir, None, None, progress=False)
    scored["clean"] = {"source": source, **clean_scores(scored["split"], by_id, data, ids, options_for)}
    return scored


def evaluate(params, *, run: str | None = None, checkpoint: str | None = None, progress: bool = True,
             mlflow: bool = True, origin: Mapping[str, str] | None = None, contamination: str | None = "") -> dict:
    """Decode, write, score and report as `params.evaluate` says; returns the scored dict (eval.score shape)
    with the files written (`files`) and the tasks skipped (`skipped`). `origin` says where each value of
    params came from (for the errors of the checks; deca.config.read_params). With the output of `deca
    contamination` (`contamination`; "" = data.contamination_dir where it exists, None = none) the scores
    on the examples it does not flag too (``clean``)."""
    ec = params.evaluate
    check_config(params, origin)
    check_outputs(ec)
    path, run_info = resolve_checkpoint(run, checkpoint, params.train.storage_dir)
    if run_info.get("tracking_uri"):
        try:
            check_server(run_info["tracking_uri"])
        except TrackingServerDown as exc:  # the evaluation does not need the server: go on without it
            log.warning("%s\n  evaluating without MLflow (no training curves; metrics not logged)", exc)
            mlflow, run_info = False, {k: v for k, v in run_info.items() if k != "tracking_uri"}
    tasks, skipped = select_tasks(ec.tasks, ec.split)
    if not tasks:
        raise ConfigError(f"none of the tasks {ec.tasks} has a {ec.split} split")
    check_metrics(tasks)
    data = read_data(params, tasks, skipped)
    flagged = read_flagged(params.data.contamination_dir if contamination == "" else contamination)
    device = pick_device(ec.device, "evaluate.device")
    precision = resolve_precision(ec.precision, device, "evaluate.precision", DECODING)
    model, vocab, extra = load_model(path, params.data.vocab_path, device)
    log.info("evaluating %s on %s (%s, %s) of %d task(s)", path, ec.split, device, precision, len(tasks))
    predictions, scored = predict_and_score(params, model, vocab, data, device, precision, progress)
    add_clean(scored, predictions, data, flagged, params.data.raw_dir)
    written = write_results(ec, scored, predictions, path, extra, skipped, run_info)
    if mlflow and run_info.get("mlflow_run_id"):
        try:
            logger = MLflowLogger(run_info["tracking_uri"], run_info["mlflow_run_id"])
            log_to_run(logger, scored, written.for_run(), int(extra.get("iteration") or 0))
        except Exception as exc:  # results are on disk; say why MLflow did not get them
            log.warning("could not log to MLflow run %s (%s: %s)", run_info["mlflow_run_id"], type(exc).__name__, exc)
    return {**scored, "files": [str(p) for p in written.all()], "skipped": skipped}


@dataclass(frozen=True)
class Written:
    """The files of one evaluation."""
    predictions: Path  # the directory of <task>.jsonl files
    metrics: Path
    report: Path
    headline: Path  # the headline bar chart
    figure3: Path  # which source answers each token (the paper's Figure 3)
    plots: tuple[Path, ...]  # the DVC plots (and training curves of the run, when MLflow has them)

    def for_run(self) -> list[Path]:
        """The files logged into the model's MLflow run."""
        return [self.metrics, self.report, self.headline, self.figure3]

    def all(self) -> list[Path]:
        return [self.predictions, *self.for_run(), *self.plots]


def write_results(ec, scored: Mapping[str, Any], predictions: Mapping[str, Sequence[Record]],
                  checkpoint: Path, extra: Mapping[str, Any], skipped: Mapping[str, str],
                  run_info: Mapping[str, Any]) -> Written:
    """Predictions, metrics, report, charts (headline.png, figure3.png) and plots at the `evaluate` section's
    paths, all renamed into place once every one is written (deca.staging): a failure (a full disk) leaves
    none of them, and the previous results as they were."""
    doc = metrics_document(scored)
    doc.update(checkpoint=str(checkpoint), iteration=extra.get("iteration"), max_examples=ec.max_examples,
               skipped=dict(skipped))
    if "clean" in scored:  # the scores without the examples `deca contamination` flags
        doc["clean"] = clean_entry(scored["clean"])
    with Staging() as stage:
        fill_predictions(stage.directory(ec.predictions_dir), predictions, made_by(checkpoint))
        write_json(stage.file(ec.metrics_path), doc)
        report_dir = stage.directory(ec.report_dir, whole=False)
        report = write_text(report_dir / "report.md",
                            report_header(checkpoint, extra, ec.split, skipped, ec.max_examples) + markdown(scored)
                            + examples_markdown(predictions))
        chart = bar_chart(scored, report_dir / "headline.png")
        figure3 = figure3_chart(scored, report_dir / "figure3.png")
        with tempfile.TemporaryDirectory() as tmp:
            plots = write_plots(scored, stage.directory(ec.plots_dir, whole=False), training_curves(run_info, tmp))
        final = [stage.final(p) for p in (report, chart, figure3, *plots)]
    return Written(Path(ec.predictions_dir), Path(ec.metrics_path), *final[:3], tuple(final[3:]))


def clean_entry(clean: Mapping[str, Any]) -> dict:
    """metrics.json's ``clean``: the decaScore and each task's headline, n and excluded examples."""
    return {"source": clean["source"], "decascore": clean["decascore"], "partial": clean["partial"],
            "not_checked": clean["not_checked"],
            "tasks": {t: {"n": r["n"], "excluded": r["excluded"],
                          "headline": r["headline"]["value"] if r.get("headline") else None}
                      for t, r in clean["results"].items()}}


def training_curves(run_info: Mapping[str, Any], out_dir: str) -> dict[str, Path]:
    """{"loss": png, "validation": png} of the run's MLflow curves ({} without a run or a reachable server)."""
    if not (run_info.get("mlflow_run_id") and run_info.get("tracking_uri")):
        return {}

    try:
        return {p.stem: p for p in plot_run(run_info["tracking_uri"], run_info["mlflow_run_id"], out_dir)}
    except Exception as exc:  # an unreachable tracking server must not lose the evaluation
        log.warning("training curves unavailable (%s: %s)", type(exc).__name__, exc)
        return {}


def made_by(checkpoint: Path) -> dict[str, str]:
    """What made a predictions directory (its MODEL_FILE): the checkpoint file and its sha256, which a
    registered version's logged model carries too (infer/promotion.py checks the two agree)."""
    return {"checkpoint": str(checkpoint), "sha256": file_sha256(checkpoint)}


def fill_predictions(directory: Path, predictions: Mapping[str, Sequence[Record]],
                     model: Mapping[str, str] | None = None) -> None:
    """<task>.jsonl files (id, prediction, then context, question and gold answer side by side) in `directory`,
    with MODEL_FILE saying which checkpoint made them; `deca score` reads the id and the prediction."""
    if model is not None:
        (directory / MODEL_FILE).write_text(json.dumps(dict(model), indent=1) + "\n", encoding="utf-8")
    for task, records in predictions.items():
        with open(directory / f"{task}.jsonl", "w", encoding="utf-8") as f:
            for record in records:
                f.write(json.dumps(dict(record), ensure_ascii=False) + "\n")


def examples_markdown(predictions: Mapping[str, Sequence[Record]], n: int = EXAMPLES_IN_REPORT) -> str:
    """A few examples per task for report.md: question, context (shortened), prediction and gold."""
    def short(text: str, limit: int = 300) -> str:
        return text if len(text) <= limit else text[:limit] + " …"

    lines = ["", "# Examples", ""]
    for task, records in predictions.items():
        lines += [f"## {task}", ""]
        for r in records[:n]:
            mark = "✓" if r["prediction"] == r["answer"] else "✗"
            lines += [f"- **question:** {r['question']}", f"  - context: {short(r['context'])}",
                      f"  - prediction: **{r['prediction']}** {mark} (gold: {r['answer']})"]
        lines.append("")
    return "\n".join(lines)


def report_header(checkpoint: Path, extra: Mapping[str, Any], split: str, skipped: Mapping[str, str],
                  max_examples: int | None) -> str:
    """The first lines of report.md: checkpoint, iterations, split, skipped tasks."""
    lines = ["# Evaluation", "", f"- checkpoint: `{checkpoint}`"]
    if "iteration" in extra:
        lines.append(f"- trained iterations: {extra['iteration']}")
    lines.append(f"- split: {split}" + (f" (first {max_examples} examples per task)" if max_examples else ""))
    if skipped:
        lines.append("- skipped: " + ", ".join(f"{t} ({why})" for t, why in skipped.items()))
    return "\n".join(lines) + "\n\n"


def log_to_run(logger: MetricLogger, scored: Mapping[str, Any], files: Sequence[Path], step: int) -> None:
    """Metrics, the evaluated iteration (tag evaluated.<split>) and the report files into the run."""
    log_scores(scored, logger, step)
    logger.set_tag(f"evaluated.{scored['split']}", step)
    if os.environ.get("DVC_EXP_NAME"):
        logger.set_tag("dvc.exp_name", os.environ["DVC_EXP_NAME"])
    for path in files:
        logger.log_artifact(path, f"evaluation/{scored['split']}")
