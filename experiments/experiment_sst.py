"""The README experiment on the real corpora of ../shared/corpora (not a test: it takes tens of minutes).

Stage `sst`: single-task MQAN on the real SST, at most --minutes of training on this machine (the
target: at least 80 validation EM; the paper's single-task figure with GloVe is 88.5). Prints the
validation curve (iteration, minutes, EM).
Stage `multitask`: fully joint training on SST, WOZ, QA-SRL and MWSC against the same setup trained
single-task on each, every run with the same time budget; prints per-task validation headline metrics
side by side (the multitask numbers are those of its best-decaScore checkpoint).

Data goes through the real pipeline (`deca prepare` from the mirror, then `deca prepare --vocab` over
the four training sets, shared by every run), into --workdir (bench/workdir.py, which the other
experiments share). Runs are tracked in MLflow as usual (experiment `readme`; MLFLOW_TRACKING_URI or
<workdir>/mlflow.db).

    .venv/bin/python -m experiments.experiment_sst sst --minutes 30
    .venv/bin/python -m experiments.experiment_sst multitask --minutes 30
    .venv/bin/python -m experiments.experiment_sst sst --minutes 2 --set model.dimension=64   # a smoke run
    .venv/bin/python -m experiments.experiment_sst sst --minutes 28 --overlay infra/params/from_scratch.yaml
    .venv/bin/python -m experiments.experiment_sst single --task srl --minutes 25 --overlay infra/params/glove.yaml
    .venv/bin/python -m experiments.experiment_sst single --task sst --iterations 1200 --overlay infra/params/glove.yaml \
        --set train.precision=bf16                     # bf16 against fp32 at the same iterations
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from bench.workdir import ROOT, SHARED, TASKS, best_results, curve, train_run, workdir_params

TARGETS = {"sst": ">= 85 EM", "woz.en": ">= 85 joint goal EM", "srl": ">= 65 nF1", "schema": "above the majority"}


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("stage", choices=["sst", "single", "multitask"],
                    help="sst = single --task sst; single: one task alone; multitask: joint vs single")
    ap.add_argument("--task", default="sst", choices=TASKS, help="the task of the single stage (default: sst)")
    ap.add_argument("--minutes", type=float, default=30.0, help="training time per run (default: %(default)s)")
    ap.add_argument("--iterations", type=int, default=0,
                    help="train exactly this many iterations instead of --minutes (single stages; e.g. to compare "
                         "train.precision=bf16 with fp32 at the same iterations)")
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"),
                    help="data, runs and MLflow store of the experiment (default: %(default)s, git-ignored)")
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                    help="parameter override as for `deca train` (e.g. train.val_every=50)")
    ap.add_argument("--overlay", action="append", default=[], metavar="FILE",
                    help="partial params file applied before --set (e.g. infra/params/from_scratch.yaml)")
    return ap.parse_args()


def single(args, params, workdir: Path, report: dict) -> str:
    """One task trained alone: its validation curve printed and added to `report`; the report's stage name."""
    task = "sst" if args.stage == "sst" else args.task
    label = f"{task}-single" + ("-bf16" if params.train.precision == "bf16" else "")
    out = train_run(params, label, [task], "single_task", args.minutes, workdir, args.iterations)
    points = curve(out, task)
    print(f"\n{task} single-task, run {out.run_name} (MLflow {out.mlflow_run_id})")
    print(f"{'iteration':>9} {'minutes':>8} {'headline':>8}")
    for it, minutes, value in points:
        print(f"{it:9d} {minutes:8.1f} {value:8.1f}")
    best = max(points, key=lambda p: p[2]) if points else None
    if best:
        print(f"best validation headline {best[2]:.1f} at iteration {best[0]} ({best[1]:.1f} min); "
              f"issue 10 target: {TARGETS[task]}")
    report.update(task=task, curve=points, run=out.run_name, mlflow_run_id=out.mlflow_run_id,
                  precision=params.train.precision, iterations=args.iterations or None)
    stage = "sst" if task == "sst" and args.stage == "sst" else f"single-{task}"
    return stage + ("-bf16" if params.train.precision == "bf16" else "")


def multitask(args, params, workdir: Path, report: dict) -> str:
    """Fully joint training against each task alone, the same budget each; the table printed."""
    single_runs = {t: best_results(train_run(params, f"single-{t}", [t], "single_task", args.minutes, workdir))
                   for t in TASKS}
    joint = best_results(train_run(params, "fully-joint", TASKS, "fully_joint", args.minutes, workdir))
    print(f"\n{'task':10} {'single-task':>12} {'fully joint':>12}")
    for t in TASKS:
        print(f"{t:10} {single_runs[t][t]:12.1f} {joint[t]:12.1f}")
    print(f"{'sum':10} {sum(single_runs[t][t] for t in TASKS):12.1f} {sum(joint[t] for t in TASKS):12.1f}")
    report.update(single=single_runs, joint=joint)
    return args.stage


def main() -> None:
    args = parse_args()
    if not SHARED.is_dir():
        sys.exit(f"real corpora not found at {SHARED}")
    workdir = Path(args.workdir).resolve()
    params, _ = workdir_params(workdir, args.params, args.overlay, args.overrides)
    report: dict = {"stage": args.stage, "minutes": args.minutes, "model": dataclasses.asdict(params.model),
                    "train": {k: v for k, v in dataclasses.asdict(params.train).items()
                              if k in ("lr", "warmup", "token_budget", "weight_decay", "ema_decay", "num_workers")}}
    run = single if args.stage in ("sst", "single") else multitask
    stage = run(args, params, workdir, report)
    (workdir / f"report-{stage}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
