"""README experiment, part 2: fully joint MQAN on SST, WOZ, QA-SRL and MWSC against single-task runs.

Unlike `python -m experiments.experiment_sst multitask` (same budget for every run), each run gets its
own time budget here, so that a fixed wall-clock allowance can be split: `--joint-minutes` for the fully
joint run and `--single-minutes` for each single-task run of `--single-tasks` (SST single-task usually comes
from the 30-minute curve of `python -m experiments.experiment_sst sst`, read back with `--sst-report`).
Data, vocabulary, workdir and overrides are those of `experiment_sst` (bench/workdir.py: same
processed data and vocabulary, so the runs compare).

Writes <workdir>/report-multitask.json: per run the MLflow id, iterations and minutes reached, the
validation curve of each task and the best checkpoint's headline metrics.

    .venv/bin/python -m experiments.experiment_multitask --joint-minutes 18 --single-minutes 5 \\
        --set train.warmup=200 --set train.val_every=100
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from bench import workdir as ex
from bench.workdir import ROOT


def summarize(outcome, tasks: list[str]) -> dict:
    """Curves per task, the best checkpoint's headlines and the last iteration reached."""
    curves = {t: ex.curve(outcome, t) for t in tasks}
    last = max((p[0] for c in curves.values() for p in c), default=0)
    minutes = max((p[1] for c in curves.values() for p in c), default=0.0)
    return {"run": outcome.run_name, "mlflow_run_id": outcome.mlflow_run_id, "last_iteration": last,
            "minutes_at_last_validation": minutes, "curves": curves, "best": ex.best_results(outcome)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--joint-minutes", type=float, default=20.0)
    ap.add_argument("--single-minutes", type=float, default=7.0)
    ap.add_argument("--single-tasks", nargs="*", default=["woz.en", "srl", "schema"],
                    help="tasks trained single-task here (default: %(default)s)")
    ap.add_argument("--skip-joint", action="store_true", help="only the single-task runs")
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    ap.add_argument("--params", default=str(ROOT / "params.yaml"))
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--overlay", action="append", default=[], metavar="FILE",
                    help="partial params file applied before --set (e.g. infra/params/from_scratch.yaml)")
    ap.add_argument("--report", default="report-multitask.json", help="report file name in the workdir")
    args = ap.parse_args()

    workdir = Path(args.workdir).resolve()
    params, overrides = ex.workdir_params(workdir, args.params, args.overlay, args.overrides)

    out_path = workdir / args.report
    report = json.loads(out_path.read_text()) if out_path.exists() else {}
    report.setdefault("runs", {})
    if not args.skip_joint:
        joint = ex.train_run(params, "fully-joint", ex.TASKS, "fully_joint", args.joint_minutes, workdir)
        report["runs"]["fully_joint"] = summarize(joint, ex.TASKS) | {"minutes_budget": args.joint_minutes,
                                                                       "overrides": overrides}
        out_path.write_text(json.dumps(report, indent=1), encoding="utf-8")
    for t in args.single_tasks:
        out = ex.train_run(params, f"single-{t}", [t], "single_task", args.single_minutes, workdir)
        report["runs"][f"single:{t}"] = summarize(out, [t]) | {"minutes_budget": args.single_minutes,
                                                                    "overrides": overrides}
        out_path.write_text(json.dumps(report, indent=1), encoding="utf-8")
    print(json.dumps({k: v["best"] for k, v in report["runs"].items()}, indent=1))


if __name__ == "__main__":
    main()
