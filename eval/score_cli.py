"""`deca score`: score prediction files against the processed gold, print one JSON object.

    deca score --task squad --split validation --predictions eval/predictions/squad.jsonl
    deca score --split validation --predictions-dir eval/predictions      # every <task>.jsonl + decaScore

Defaults come from params.yaml (`data`, `evaluate` sections). Prints the scores; writes a metrics file
only with ``--metrics-out FILE`` (never the pipeline's eval/metrics.json unless named), optionally a report
(``--report DIR``) and MLflow metrics (``--mlflow``).
"""
from __future__ import annotations

import argparse
import json
import sys

from deca.checks import params_from_args
from deca.params_args import add_params_arguments
from deca.errors import ConfigError

EPILOG = (
    "Prints {task, split, n, metrics, headline} for --task, or {split, decascore, tasks, partial, missing,\n"
    "results} for --predictions-dir; the decaScore is the sum of the headline metrics of the decaNLP\n"
    "tasks present and says `partial` when some of the ten are missing."
)


def configure(parser: argparse.ArgumentParser) -> None:
    what = parser.add_argument_group("what to score")
    what.add_argument("--task", help="score one task (needs --predictions)")
    what.add_argument("--predictions", metavar="FILE", help='JSON lines {"id": ..., "prediction": ...} for --task')
    what.add_argument("--predictions-dir", metavar="DIR",
                      help="score every <task>.jsonl in DIR (default: params evaluate.predictions_dir)")
    what.add_argument("--tasks", nargs="+", metavar="SEL",
                      help="with --predictions-dir: only these tasks (names, globs, 'decanlp')")
    what.add_argument("--split", help="split to score against (default: params evaluate.split)")
    data = parser.add_argument_group("data")
    data.add_argument("--data", metavar="DIR", help="processed Parquet directory (default: params data.processed_dir)")
    data.add_argument("--raw-dir", metavar="DIR",
                      help="raw corpora directory, to find WikiSQL's <split>.db (default: params data.raw_dir)")
    data.add_argument("--wikisql-db", metavar="FILE", help="WikiSQL SQLite database for execution accuracy")
    out = parser.add_argument_group("outputs")
    out.add_argument("--metrics-out", metavar="FILE",
                     help="also write the metrics JSON to FILE (by default nothing is written: the pipeline's "
                          "evaluate.metrics_path belongs to `deca evaluate`)")
    out.add_argument("--report", metavar="DIR", help="write report.md and headline.png into DIR")
    out.add_argument("--mlflow", action="store_true",
                     help="log the metrics to the active MLflow run ($MLFLOW_RUN_ID)")
    parser.add_argument("--processes", type=int, metavar="N", help="ROUGE worker processes (default: automatic)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from eval.score import log_scores, score_dir, score_file, task_options, write_metrics

    params = params_from_args(args)
    split = args.split or params.evaluate.split
    processed = args.data or params.data.processed_dir
    raw_dir = args.raw_dir or params.data.raw_dir
    if args.task and args.predictions_dir:
        raise ConfigError("give either --task with --predictions, or --predictions-dir, not both")
    if args.predictions and not args.task:
        raise ConfigError("--predictions needs --task (or use --predictions-dir DIR for every task)")
    if args.tasks and args.task:
        raise ConfigError("--tasks goes with --predictions-dir; use --task for one task")
    if args.processes is not None and args.processes < 1:
        raise ConfigError(f"--processes must be at least 1, got {args.processes}")
    options_for = task_options(split, raw_dir, args.processes, args.wikisql_db, progress=not args.no_progress)

    if args.task:
        if not args.predictions:
            raise ConfigError("--task needs --predictions FILE")
        scored = score_file(args.task, split, args.predictions, processed, options=options_for(args.task))
    else:
        scored = score_dir(split, args.predictions_dir or params.evaluate.predictions_dir, processed,
                           tasks=args.tasks, options_for=options_for)

    if args.metrics_out:
        write_metrics(args.metrics_out, scored)
        print(f"wrote {args.metrics_out}", file=sys.stderr)
    if args.report is not None:
        from eval.report import write_report

        write_report(scored, args.report)
    if args.mlflow:
        log_scores(scored)
    json.dump(scored, sys.stdout)
    sys.stdout.write("\n")
    return 0
