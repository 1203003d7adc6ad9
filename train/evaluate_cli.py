"""`deca evaluate`: decode a checkpoint on a split of every task, write the predictions, score, report.

Examples:
  deca evaluate                                        # the latest run under train.storage_dir, validation
  deca evaluate --run checkpoints/pipeline             # a run directory: its best/model.pt, its MLflow run
  deca evaluate --checkpoint model.pt --split test     # any checkpoint file; the test splits
  deca evaluate --tasks sst woz.en --max-examples 200  # a quick look (scores cover those examples only)

Writes (paths from the `evaluate` section of params.yaml):
  <predictions_dir>/<task>.jsonl   {"id": ..., "prediction": "<detokenized lowercased text>"} per line
  <metrics_path>                   per-task metrics and the decaScore (`dvc metrics show`)
  <report_dir>/report.md, headline.png
  <plots_dir>/per_task.csv, loss.png, validation.png  (`dvc plots show`; curves from the MLflow run)
Every file is written under a temporary name and renamed when complete; the predictions directory is
replaced as a whole, so a failed run leaves the previous results as they were. With a run directory the
metrics are also logged into that run's MLflow run (as <split>/<task>/<metric>, <split>/decascore).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

log = logging.getLogger("deca.evaluate")

RUN_FILE = "deca_run.json"  # written by train.trainer next to the run's checkpoints
READ_COLUMNS = ["id", "task", "context_tokens", "question_tokens", "answer_tokens", "answer", "answers", "gold"]


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = __doc__.split("\n", 2)[2]
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--run", metavar="DIR", help="a training run directory (<train.storage_dir>/<run name>); "
                                                    "default: the latest run under train.storage_dir")
    which.add_argument("--checkpoint", metavar="FILE", help="a model checkpoint file (train/checkpoint.py format)")
    parser.add_argument("--split", help="validation or test (default: evaluate.split)")
    parser.add_argument("--tasks", nargs="+", metavar="SEL", help="names, globs, 'decanlp', 'all' (default: evaluate.tasks)")
    parser.add_argument("--batch-size", type=int, metavar="N", help="examples per decoding batch (default: evaluate.batch_size)")
    parser.add_argument("--max-examples", type=int, metavar="N", help="first N examples of each task (default: all)")
    parser.add_argument("--max-answer-length", type=int, metavar="N", help="decoding steps (default: the model's)")
    parser.add_argument("--device", help="auto, cpu, cuda or cuda:N (default: evaluate.device)")
    parser.add_argument("--out", metavar="DIR",
                        help="write predictions, metrics, report and plots under DIR (default: the pipeline's "
                             "evaluate.* paths for the pipeline's split, eval/<split>/ for another split, so that "
                             "`--split test` never overwrites the pipeline's results)")
    parser.add_argument("--params", default="params.yaml", metavar="FILE", help="params file (default: %(default)s)")
    parser.add_argument("--no-mlflow", action="store_true", help="do not log to the run's MLflow run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


# ----------------------------------------------------------------------------------------------- inputs

def find_run(storage_dir: str | Path) -> Path:
    """The most recent run directory under `storage_dir` (one holding deca_run.json or best/model.pt)."""
    from deca.errors import ConfigError

    marks = list(Path(storage_dir).glob(f"*/{RUN_FILE}")) + list(Path(storage_dir).glob("*/best/model.pt"))
    runs = sorted(marks, key=lambda p: p.stat().st_mtime)
    if runs:
        last = runs[-1]
        return last.parent if last.name == RUN_FILE else last.parent.parent
    raise ConfigError(f"no training run under {storage_dir}; run `deca train` first or pass --run / --checkpoint")


def resolve_checkpoint(run: str | None, checkpoint: str | None, storage_dir: str) -> tuple[Path, dict]:
    """(checkpoint file, run info from deca_run.json or {})."""
    from deca.errors import DataError

    if checkpoint:
        return Path(checkpoint), {}
    run_dir = Path(run) if run else find_run(storage_dir)
    path = run_dir / "best" / "model.pt"
    if not path.exists():
        raise DataError(path, "the run has no best model",
                        fix="train until at least one validation (train.val_every) or pass --checkpoint FILE")
    info_file = run_dir / RUN_FILE
    info = json.loads(info_file.read_text(encoding="utf-8")) if info_file.exists() else {}
    return path, info


def pick_device(name: str):
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def load_model(path: Path, vocab_path: str, device):
    """(model in eval mode on `device`, vocabulary, the checkpoint's extra dict)."""
    from train.checkpoint import load_checkpoint, read_checkpoint
    from train.vocab import Vocab

    max_generative = int(read_checkpoint(path)["model_config"]["max_generative_vocab"])
    vocab = Vocab.load(vocab_path, max_generative)
    model, extra = load_checkpoint(path, vocab, map_location=device)
    model.to(device).eval()
    return model, vocab, extra


def select_tasks(selectors: Sequence[str], split: str) -> tuple[list[str], dict[str, str]]:
    """(tasks to evaluate, {task: reason} for the ones skipped because they lack the split)."""
    from deca.registry import get_task, resolve_tasks

    chosen, skipped = [], {}
    for name in resolve_tasks(list(selectors)):
        if split in get_task(name).splits:
            chosen.append(name)
        else:
            skipped[name] = f"no {split} split"
    return chosen, skipped


def read_rows(processed_dir: str, task: str, split: str, max_examples: int | None) -> list[dict]:
    from deca.errors import DataError
    from deca.schema import read_split, split_dir

    try:
        table = read_split(processed_dir, task, split, columns=READ_COLUMNS)
    except FileNotFoundError as exc:
        raise DataError(split_dir(processed_dir, task, split), "no processed Parquet shards",
                        fix=f"run `deca prepare --tasks {task}` (or `dvc repro prepare@{task.replace('.', '_')}`)") from exc
    if max_examples is not None:
        table = table.slice(0, max_examples)
    return table.to_pylist()


# --------------------------------------------------------------------------------------------- decoding

def decode(model, vocab, rows: Sequence[dict], batch_size: int, max_len: int | None, device,
           bar=None) -> list[str]:
    """Greedy answers for `rows`, in their order. Batches hold examples of similar length."""
    import torch

    from train.batch import collate

    order = sorted(range(len(rows)), key=lambda i: (len(rows[i]["context_tokens"]) + len(rows[i]["question_tokens"]), i))
    texts: list[str | None] = [None] * len(rows)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out = model.greedy(collate([rows[i] for i in idx], vocab, device), max_len)
            for i, text in zip(idx, out.texts):
                texts[i] = text.lower()
            if bar is not None:
                bar.update(len(idx))
    return [t if t is not None else "" for t in texts]


# ---------------------------------------------------------------------------------------------- outputs

def write_predictions_dir(target: str | Path, predictions: Mapping[str, Sequence[tuple[str, str]]]) -> Path:
    """Write <task>.jsonl files into a fresh directory, then swap it in for `target` as a whole."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for task, pairs in predictions.items():
            with open(tmp / f"{task}.jsonl", "w", encoding="utf-8") as f:
                for pid, text in pairs:
                    f.write(json.dumps({"id": pid, "prediction": text}, ensure_ascii=False) + "\n")
        old = None
        if target.exists():
            old = target.with_name(f".{target.name}.old.{os.getpid()}")
            target.rename(old)
        tmp.rename(target)
        if old is not None:
            shutil.rmtree(old)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def write_plots(scored: Mapping[str, Any], plots_dir: str | Path, run_info: Mapping[str, Any]) -> list[Path]:
    """per_task.csv and .png (headline per task) and the training curves of the run (or a note that there are
    none)."""
    from deca.io import atomic_write, write_text
    from eval.report import bar_chart

    plots_dir = Path(plots_dir)
    rows = ["task,metric,score"] + [f"{t},{r['headline']['name']},{r['headline']['value']:.4f}"
                                    for t, r in scored["results"].items()]
    written = [write_text(plots_dir / "per_task.csv", "\n".join(rows) + "\n"),
               bar_chart(scored, plots_dir / "per_task.png")]  # an image: `dvc plots show` needs no internet
    curves: dict[str, Path] = {}
    if run_info.get("mlflow_run_id") and run_info.get("tracking_uri"):
        from train.tracking import plot_run

        with tempfile.TemporaryDirectory() as tmp:
            try:
                made = plot_run(run_info["tracking_uri"], run_info["mlflow_run_id"], tmp)
            except Exception as exc:  # an unreachable tracking server must not lose the evaluation
                log.warning("training curves unavailable (%s: %s)", type(exc).__name__, exc)
                made = []
            for png in made:
                curves[png.stem] = atomic_write(plots_dir / png.name, lambda t, src=png: shutil.copyfile(src, t))
    for name in ("loss", "validation"):
        if name not in curves:
            curves[name] = _empty_plot(plots_dir / f"{name}.png", f"no {name} curve recorded for this checkpoint")
    return written + [curves["loss"], curves["validation"]]


def _empty_plot(path: Path, text: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from deca.io import atomic_write

    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    atomic_write(path, lambda t: fig.savefig(t, format="png", dpi=80))
    plt.close(fig)
    return path


def report_header(checkpoint: Path, extra: Mapping[str, Any], split: str, skipped: Mapping[str, str],
                  max_examples: int | None) -> str:
    lines = ["# Evaluation", "", f"- checkpoint: `{checkpoint}`"]
    if "iteration" in extra:
        lines.append(f"- trained iterations: {extra['iteration']}")
    lines.append(f"- split: {split}" + (f" (first {max_examples} examples per task)" if max_examples else ""))
    if skipped:
        lines.append("- skipped: " + ", ".join(f"{t} ({why})" for t, why in skipped.items()))
    return "\n".join(lines) + "\n\n"


def log_to_run(run_info: Mapping[str, Any], scored: Mapping[str, Any], files: Sequence[Path], step: int) -> None:
    """Metrics (and the report files as artifacts) into the training run's MLflow run."""
    import time

    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from eval.score import mlflow_metrics

    client = MlflowClient(tracking_uri=run_info["tracking_uri"])
    run_id = run_info["mlflow_run_id"]
    now = int(time.time() * 1000)
    batch = [Metric(k, v, now, step) for k, v in mlflow_metrics(scored).items()]
    for i in range(0, len(batch), 500):
        client.log_batch(run_id, metrics=batch[i:i + 500])
    if os.environ.get("DVC_EXP_NAME"):
        client.set_tag(run_id, "dvc.exp_name", os.environ["DVC_EXP_NAME"])
    for path in files:
        client.log_artifact(run_id, str(path), f"evaluation/{scored['split']}")


# ------------------------------------------------------------------------------------------------- main

def evaluate(params, *, run: str | None = None, checkpoint: str | None = None, progress: bool = True,
             mlflow: bool = True) -> dict:
    """Decode, write, score and report as `params.evaluate` says; returns the scored dict (eval.score shape)."""
    from tqdm import tqdm

    from deca.errors import ConfigError
    from eval.api import decascore, score_task
    from deca.io import write_json, write_text
    from eval.report import bar_chart, markdown
    from eval.score import metrics_document, task_options

    ec = params.evaluate
    if ec.split not in ("validation", "test"):
        raise ConfigError(f"evaluate.split must be validation or test, got {ec.split!r}")
    if ec.batch_size < 1 or (ec.max_examples is not None and ec.max_examples < 1):
        raise ConfigError("evaluate.batch_size and evaluate.max_examples must be positive")
    path, run_info = resolve_checkpoint(run, checkpoint, params.train.storage_dir)
    tasks, skipped = select_tasks(ec.tasks, ec.split)
    if not tasks:
        raise ConfigError(f"none of the tasks {ec.tasks} has a {ec.split} split")
    device = pick_device(ec.device)
    model, vocab, extra = load_model(path, params.data.vocab_path, device)
    log.info("evaluating %s on %s (%s) of %d task(s)", path, ec.split, device, len(tasks))

    data = {t: read_rows(params.data.processed_dir, t, ec.split, ec.max_examples) for t in tasks}
    empty = [t for t, rows in data.items() if not rows]
    for t in empty:
        skipped[t] = f"empty {ec.split} split"
        del data[t]
    options_for = task_options(ec.split, params.data.raw_dir, None, None, progress=False)
    predictions, results = {}, {}
    with tqdm(total=sum(map(len, data.values())), desc="decode", unit="ex", disable=not progress) as bar:
        for task, rows in data.items():
            bar.set_postfix_str(task)
            texts = decode(model, vocab, rows, ec.batch_size, ec.max_answer_length, device, bar)
            predictions[task] = [(str(r["id"]), text) for r, text in zip(rows, texts)]
            res = score_task(task, dict(predictions[task]), rows, options=options_for(task))
            results[task] = {"task": task, "split": ec.split, **{k: res[k] for k in ("n", "metrics", "headline")}}
    scored = {"split": ec.split, **decascore(results), "results": results}

    write_predictions_dir(ec.predictions_dir, predictions)
    doc = metrics_document(scored)
    doc.update(checkpoint=str(path), iteration=extra.get("iteration"), max_examples=ec.max_examples,
               skipped=skipped)
    metrics = write_json(ec.metrics_path, doc)
    report = write_text(Path(ec.report_dir) / "report.md",
                        report_header(path, extra, ec.split, skipped, ec.max_examples) + markdown(scored))
    chart = bar_chart(scored, Path(ec.report_dir) / "headline.png")
    plots = write_plots(scored, ec.plots_dir, run_info)
    if mlflow and run_info.get("mlflow_run_id"):
        try:
            log_to_run(run_info, scored, [metrics, report, chart], int(extra.get("iteration") or 0))
        except Exception as exc:  # results are on disk; say why MLflow did not get them
            log.warning("could not log to MLflow run %s (%s: %s)", run_info["mlflow_run_id"], type(exc).__name__, exc)
    scored["files"] = [str(p) for p in (Path(ec.predictions_dir), metrics, report, chart, *plots)]
    scored["skipped"] = skipped
    return scored


def output_paths(out: str) -> dict[str, str]:
    """evaluate.* output paths under one folder (an evaluation that is not the pipeline's stage)."""
    return {"predictions_dir": f"{out}/predictions", "metrics_path": f"{out}/metrics.json",
            "report_dir": f"{out}/report", "plots_dir": f"{out}/plots"}


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from deca.config import load_params

    params = load_params(args.params)
    overrides = {k: v for k, v in {"split": args.split, "tasks": args.tasks, "batch_size": args.batch_size,
                                   "max_examples": args.max_examples, "max_answer_length": args.max_answer_length,
                                   "device": args.device}.items() if v is not None}
    out = args.out or (f"eval/{args.split}" if args.split and args.split != params.evaluate.split else None)
    if out:
        overrides.update(output_paths(out))
        print(f"writing under {out}/ (the pipeline's evaluation in {params.evaluate.metrics_path} is left as it is)")
    params = dataclasses.replace(params, evaluate=dataclasses.replace(params.evaluate, **overrides))
    scored = evaluate(params, run=args.run, checkpoint=args.checkpoint, progress=not args.no_progress,
                      mlflow=not args.no_mlflow)
    width = max(len(t) for t in scored["results"])
    for task, r in scored["results"].items():
        print(f"{task:<{width}}  {r['headline']['name']:<13} {r['headline']['value']:7.2f}  (n={r['n']})")
    for task, why in scored["skipped"].items():
        print(f"{task:<{width}}  skipped: {why}")
    note = f" (partial: {len(scored['missing'])} of the ten missing)" if scored["partial"] else ""
    print(f"decaScore {scored['decascore']:.2f}{note}")
    print("wrote " + ", ".join(scored["files"]))
    return 0
