"""The README experiment on the real corpora of ../shared/corpora (not a test: it takes tens of minutes).

Stage `sst`: single-task MQAN on the real SST, at most --minutes of training on this machine (the
target: at least 80 validation EM; the paper's single-task figure with GloVe is 88.5). Prints the
validation curve (iteration, minutes, EM).
Stage `multitask`: fully joint training on SST, WOZ, QA-SRL and MWSC against the same setup trained
single-task on each, every run with the same time budget; prints per-task validation headline metrics
side by side (the multitask numbers are those of its best-decaScore checkpoint).

Data goes through the real pipeline (`deca prepare` from the mirror, then `deca prepare --vocab` over
the four training sets, shared by every run), into --workdir. Runs are tracked in MLflow as usual
(experiment `readme`; MLFLOW_TRACKING_URI or <workdir>/mlflow.db).

    .venv/bin/python experiments/experiment_sst.py sst --minutes 30
    .venv/bin/python experiments/experiment_sst.py multitask --minutes 30
    .venv/bin/python experiments/experiment_sst.py sst --minutes 2 --set model.dimension=64   # a smoke run
    .venv/bin/python experiments/experiment_sst.py sst --minutes 28 --overlay infra/params/from_scratch.yaml
    .venv/bin/python experiments/experiment_sst.py single --task srl --minutes 25 --overlay infra/params/glove.yaml
    .venv/bin/python experiments/experiment_sst.py single --task sst --iterations 1200 --overlay infra/params/glove.yaml \
        --set train.precision=bf16                     # bf16 against fp32 at the same iterations
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from deca.checks import load_params

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpora"
TASKS = ["sst", "woz.en", "srl", "schema"]
TARGETS = {"sst": ">= 85 EM", "woz.en": ">= 85 joint goal EM", "srl": ">= 65 nF1", "schema": "above the majority"}


def prepare(workdir: Path) -> tuple[Path, Path]:
    """Processed data and vocabulary of the four tasks (skipped when already there)."""
    processed, vocab = workdir / "processed", workdir / "vocab.txt"
    deca = [sys.executable, "-m", "deca.cli"]
    if not all((processed / t / "train").is_dir() for t in TASKS):
        subprocess.run([*deca, "prepare", "--tasks", *TASKS, "--splits", "train,validation", "--mirror", str(SHARED),
                        "--out", str(processed)], check=True, cwd=ROOT)
    if not vocab.exists():
        subprocess.run([*deca, "prepare", "--vocab", str(vocab), "--tasks", *TASKS, "--out", str(processed)],
                       check=True, cwd=ROOT)
    return processed, vocab


def overlay_overrides(paths: list[str]) -> dict:
    """Dotted overrides ({"model.dimension": 128, ...}) from partial params files such as
    infra/params/from_scratch.yaml (read and merged as `python -m infra.overlay` does; later files win)."""
    from infra.overlay import leaves, load_overlay, merge

    combined: dict = {}
    for path in paths:
        combined = merge(combined, load_overlay(path))
    return dict(leaves(combined))


def train_run(params, name: str, tasks: list[str], strategy: str, minutes: float, workdir: Path,
              iterations: int = 0):
    """One `deca train` run: `minutes` of training, or exactly `iterations` when given (no time limit)."""
    from train.driver import fit

    tc = dataclasses.replace(params.train, tasks=tasks, strategy=strategy, max_minutes=None if iterations else minutes,
                             iterations=iterations or 100000, storage_dir=str(workdir / "checkpoints"),
                             experiment="readme")
    p = dataclasses.replace(params, train=tc)
    return fit(p, run_name=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}", progress=True, project=workdir)


def headline_history(mlflow_client, run_id: str, task: str) -> list:
    """The MLflow history of `task`'s validation headline, by step: `validation/<task>/headline`, or
    `val/<task>/headline` in runs recorded before the metrics had one namespace."""
    for key in (f"validation/{task}/headline", f"val/{task}/headline"):
        points = mlflow_client.get_metric_history(run_id, key)
        if points:
            return sorted(points, key=lambda m: m.step)
    return []


def curve(outcome, task: str) -> list[tuple[int, float, float]]:
    """(iteration, minutes since the first validation metric of the run's first step, headline)."""
    from deca.metric_logging import client

    c = client(outcome.tracking_uri)
    start = c.get_run(outcome.mlflow_run_id).info.start_time
    return [(m.step, (m.timestamp - start) / 60000, m.value)
            for m in headline_history(c, outcome.mlflow_run_id, task)]


def best_results(outcome) -> dict[str, float]:
    """Per-task headline metrics of the run's best checkpoint."""
    import torch

    extra = torch.load(outcome.best / "model.pt", map_location="cpu", weights_only=True)["extra"]
    return {t: r["headline"]["value"] for t, r in extra["results"].items()} | {"_iteration": extra["iteration"]}


def main() -> None:
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
    args = ap.parse_args()
    if not SHARED.is_dir():
        sys.exit(f"real corpora not found at {SHARED}")

    from deca.config import parse_overrides

    workdir = Path(args.workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{workdir / 'mlflow.db'}")
    processed, vocab = prepare(workdir)
    overrides = {"train.val_every": 50, "train.save_every": 200, "train.log_every": 10,
                 "train.num_workers": 2, "train.cpus_per_worker": 1.0, **overlay_overrides(args.overlay),
                 **parse_overrides(args.overrides)}
    params = load_params(args.params, overrides=overrides)
    params = dataclasses.replace(params, data=dataclasses.replace(
        params.data, processed_dir=str(processed), vocab_path=str(vocab)))

    report: dict = {"stage": args.stage, "minutes": args.minutes, "model": dataclasses.asdict(params.model),
                    "train": {k: v for k, v in dataclasses.asdict(params.train).items()
                              if k in ("lr", "warmup", "token_budget", "weight_decay", "ema_decay", "num_workers")}}
    if args.stage in ("sst", "single"):
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
        args.stage = "sst" if task == "sst" and args.stage == "sst" else f"single-{task}"
        args.stage += "-bf16" if params.train.precision == "bf16" else ""
    else:
        single = {t: best_results(train_run(params, f"single-{t}", [t], "single_task", args.minutes, workdir))
                  for t in TASKS}
        joint_out = train_run(params, "fully-joint", TASKS, "fully_joint", args.minutes, workdir)
        joint = best_results(joint_out)
        print(f"\n{'task':10} {'single-task':>12} {'fully joint':>12}")
        for t in TASKS:
            print(f"{t:10} {single[t][t]:12.1f} {joint[t]:12.1f}")
        print(f"{'sum':10} {sum(single[t][t] for t in TASKS):12.1f} {sum(joint[t] for t in TASKS):12.1f}")
        report.update(single=single, joint=joint)
    (workdir / f"report-{args.stage}.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
