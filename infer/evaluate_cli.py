"""`deca evaluate`: decode a checkpoint on a split of every task, write the predictions, score, report.

Examples:
  deca evaluate                                        # the latest run under train.storage_dir, validation
  deca evaluate --run checkpoints/pipeline             # a run directory: its best/model.pt, its MLflow run
  deca evaluate --checkpoint model.pt --split test     # any checkpoint file; the test splits
  deca evaluate --model models:/decanlp@champion       # a registered model (`deca register`)
  deca evaluate --tasks sst woz.en --max-examples 200  # a quick look (scores cover those examples only)
  deca evaluate --set evaluate.batch_size=64           # any params value, as for every command

Writes (paths from the `evaluate` section of params.yaml):
  <predictions_dir>/<task>.jsonl   {"id": ..., "prediction": "<detokenized lowercased text>"} per line
  <metrics_path>                   per-task metrics and the decaScore (`dvc metrics show`), and per task
                                   "source": the paper's Figure 3 (share of answer tokens whose largest switch
                                   weight is the vocabulary / context / question, %, and the mean weights)
  <report_dir>/report.md, headline.png, figure3.png (Figure 3 as stacked bars)
  <plots_dir>/per_task.csv, per_task.png, figure3.csv, figure3.png, loss.png, validation.png
                                   (`dvc plots show`; curves from MLflow)
Every file is written under a temporary name and all are renamed into place once complete (the predictions
directory replaced as a whole), so a failed run (a full disk) leaves no partial output and the previous results
as they were. With a run directory the
metrics are also logged into that run's MLflow run (as <split>/<task>/<metric>, <split>/decascore,
<split>/<task>/source/{vocabulary,context,question}_{share,mean_weight}; the last are not in the decaScore).
"""
from __future__ import annotations

import argparse
import dataclasses

from deca.checks import checked_params
from deca.params_args import add_params_arguments, parse_overrides
from deca.runs import add_model_arguments
from mqan.allocator import keep_large_blocks


def configure(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser, "a training run directory (<train.storage_dir>/<run name>); default: the latest run "
                             "under train.storage_dir")
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
    add_params_arguments(parser)
    parser.add_argument("--contamination", metavar="DIR",
                        help="the output of `deca contamination`: report each task's score and the decaScore also "
                             "on the examples it does not flag (default: data.contamination_dir where it exists; "
                             "'none': not)")
    parser.add_argument("--no-mlflow", action="store_true", help="do not log to the run's MLflow run")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def output_paths(out: str) -> dict[str, str]:
    """evaluate.* output paths under one folder (an evaluation that is not the pipeline's stage)."""
    return {"predictions_dir": f"{out}/predictions", "metrics_path": f"{out}/metrics.json",
            "report_dir": f"{out}/report", "plots_dir": f"{out}/plots"}


def run(args: argparse.Namespace) -> int:
    from infer.evaluate import evaluate

    keep_large_blocks()
    params, origin = checked_params(args.params, parse_overrides(args.overrides), declared=True)
    overrides = {k: v for k, v in {"split": args.split, "tasks": args.tasks, "batch_size": args.batch_size,
                                   "max_examples": args.max_examples, "max_answer_length": args.max_answer_length,
                                   "device": args.device}.items() if v is not None}
    out = args.out or (f"eval/{args.split}" if args.split and args.split != params.evaluate.split else None)
    if out:
        overrides.update(output_paths(out))
        print(f"writing under {out}/ (the pipeline's evaluation in {params.evaluate.metrics_path} is left as it is)")
    origin = {**origin, **{f"evaluate.{k}": f"--{k.replace('_', '-')}" for k in overrides}}  # for deca.checks
    params = dataclasses.replace(params, evaluate=dataclasses.replace(params.evaluate, **overrides))
    checkpoint = args.checkpoint
    if args.model:
        from infer.model_uri import model_checkpoint

        checkpoint = str(model_checkpoint(args.model))
    contamination = None if (args.contamination or "").lower() == "none" else (args.contamination or "")
    scored = evaluate(params, run=args.run, checkpoint=checkpoint, progress=not args.no_progress,
                      mlflow=not args.no_mlflow, origin=origin, contamination=contamination)
    clean = scored.get("clean", {}).get("results", {})
    width = max(len(t) for t in scored["results"])
    for task, r in scored["results"].items():
        share = r["sources"]["share"]
        figure3 = "/".join(f"{share[s]:.0f}" for s in ("vocabulary", "context", "question")) if share else "-"
        print(f"{task:<{width}}  {r['headline']['name']:<13} {r['headline']['value']:7.2f}  (n={r['n']})  "
              f"vocabulary/context/question {figure3}%{clean_note(clean.get(task))}")
    for task, why in scored["skipped"].items():
        print(f"{task:<{width}}  skipped: {why}")
    note = f" (partial: {len(scored['missing'])} of the ten missing)" if scored["partial"] else ""
    if "clean" in scored:
        note += f"; clean subset {scored['clean']['decascore']:.2f}"
    print(f"decaScore {scored['decascore']:.2f}{note}")
    print("wrote " + ", ".join(scored["files"]))
    return 0


def clean_note(entry) -> str:
    """``  clean 81.20 (n=700, 172 flagged)`` for a task the contamination output covers, else nothing."""
    if not entry:
        return ""
    value = f"{entry['headline']['value']:.2f}" if entry.get("headline") else "-"
    return f"  clean {value} (n={entry['n']}, {entry['excluded']} flagged)"
