"""`deca train`: multitask MQAN training on Ray Train, tracked in MLflow.

Examples:
  deca train                                           # params.yaml as it is
  deca train --set train.strategy=single_task --set train.tasks=[sst] --run-name sst-only
  deca train --set train.num_workers=2 --set train.iterations=5000
  deca train --workers 0                               # Ray Train's local mode: no worker processes
  deca train --workers 1-2                             # elastic: 1 to 2 workers as nodes come and go
  deca train --resume                                  # continue the latest run where it stopped
  deca train --resume sst-only --set train.iterations=8000   # continue run sst-only, to a new length
  RAY_ADDRESS=ray://head:10001 deca train              # on an existing Ray cluster
"""
from __future__ import annotations

import argparse

from deca.config import read_params
from deca.params_args import add_params_arguments, parse_overrides
from deca.errors import ConfigError
from train.workers import parse_workers


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--run-name", help="name of the run under train.storage_dir and in MLflow "
                                           "(default: <strategy>-<date>-<time>)")
    parser.add_argument("--resume", nargs="?", const=True, default=False, metavar="NAME",
                        help="continue a stopped run from its latest checkpoint (run NAME, else the --run-name "
                             "run, else the latest run) with the settings it was started with (change one with "
                             "--set); the schedule, data order and RNGs continue exactly")
    parser.add_argument("--auto-resume", action="store_true",
                        help="with --run-name: continue that run if an interruption left it with the same params "
                             "and a checkpoint, else start it over (the DVC train stage uses this, so that "
                             "`dvc repro` after a kill continues where it stopped)")
    parser.add_argument("--workers", metavar="N|MIN-MAX",
                        help="train.num_workers: N Ray Train workers; 0 = Ray Train's local mode, the same "
                             "training in this process without starting Ray (needs train.max_failures 0); MIN-MAX: "
                             "elastic, between MIN and MAX workers as the cluster has room, same result")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from train.driver import auto_resume_run, check_training, fit

    overrides, named = parse_overrides(args.overrides), {}
    if args.workers is not None:
        try:
            overrides["train.num_workers"] = parse_workers(args.workers)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None
        named["train.num_workers"] = f"--workers {args.workers}"
    params, origin = read_params(args.params, overrides, named)  # keys and types; where each value came from
    # Every check `deca validate` runs for training, once, before a run folder is touched (`--auto-resume`
    # removes a finished run to start it over: a bad strategy must not cost it) and before the inputs are
    # looked at; the schedule it built goes to fit (not built again), the custom tasks stay declared.
    schedule = check_training(params, origin)
    run_name = args.run_name
    if isinstance(args.resume, str):
        if run_name and run_name != args.resume:
            raise ConfigError(f"--resume {args.resume} and --run-name {run_name} name different runs")
        run_name = args.resume
    resume = bool(args.resume)
    if args.auto_resume:
        if not run_name or resume:
            raise ConfigError("--auto-resume needs --run-name NAME (and no --resume)")
        resume = auto_resume_run(params, run_name)
    outcome = fit(params, run_name=run_name, resume=resume, progress=not args.no_progress, overrides=overrides,
                  schedule=schedule)
    print(f"run {outcome.run_name}: {outcome.run_dir}")
    print(f"  mlflow run {outcome.mlflow_run_id} ({outcome.tracking_uri})")
    if outcome.checkpoint:
        print(f"  latest checkpoint: {outcome.checkpoint}")
    if outcome.best:
        print(f"  best model: {outcome.best / 'model.pt'}")
    shown = {k: v for k, v in outcome.metrics.items() if k in ("iteration", "loss", "best_score")}
    if shown:
        print("  " + ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))
    return 0

