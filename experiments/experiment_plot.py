"""Small result files of the README experiment for docs/results/ (plots, CSV, JSON; no checkpoints).

Reads the reports that `python -m experiments.experiment_sst sst` and `python -m experiments.experiment_multitask` write into their workdir and
writes:
  docs/results/sst_single_task.{png,csv,json}  validation EM vs iteration and minutes (SST single-task)
  docs/results/multitask_curves.png            per-task validation headline vs iteration, joint vs single
  docs/results/multitask.json                  the per-run numbers behind docs/results/multitask.md

    .venv/bin/python -m experiments.experiment_plot
"""
from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def sst_plot(report: dict, out: Path, others: list[dict] | None = None) -> None:
    """The single-task SST curve: EM against iteration (left) and minutes (right); `others` = earlier runs
    ({"label", "curve"}, e.g. report-sst-previous.json) drawn dashed for comparison."""
    curve = report["curve"]
    its, mins, em = zip(*curve)
    with open(out / "sst_single_task.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["iteration", "minutes", "validation_em"])
        w.writerows((i, round(m, 2), round(e, 2)) for i, m, e in curve)
    best = max(curve, key=lambda p: p[2])
    (out / "sst_single_task.json").write_text(json.dumps(
        {"task": "sst", "metric": "em", "split": "validation (872 examples)", "minutes_budget": report["minutes"],
         "model": report["model"], "best": {"iteration": best[0], "minutes": round(best[1], 2), "em": round(best[2], 2)},
         "final": {"iteration": its[-1], "minutes": round(mins[-1], 2), "em": round(em[-1], 2)},
         "curve": [[i, round(m, 2), round(e, 2)] for i, m, e in curve]}, indent=1), encoding="utf-8")
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, x, label in ((axes[0], its, "iteration"), (axes[1], mins, "minutes of training (2 CPU workers)")):
        ax.plot(x, em, marker="o", ms=3, label=report.get("label", "MQAN single-task"))
        for other, color in zip(others or [], ("tab:red", "tab:purple", "tab:brown")):
            sx = [p[0] for p in other["curve"]] if x is its else [p[1] for p in other["curve"]]
            ax.plot(sx, [p[2] for p in other["curve"]], ls="--", marker="x", ms=3, color=color, label=other["label"])
        ax.axhline(80, color="grey", ls="--", lw=1, label="target 80")
        ax.axhline(88.5, color="green", ls=":", lw=1, label="paper single-task (GloVe) 88.5")
        ax.set_xlabel(label)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("SST validation EM")
    axes[0].set_ylim(40, 92)  # an averaged model's first validation (near 0) is off the chart
    axes[0].legend(loc="lower right", fontsize=8)
    m = report["model"]
    fig.suptitle(f"MQAN single-task on real SST (d={m['dimension']}, embeddings learned from SST)")
    fig.tight_layout()
    fig.savefig(out / "sst_single_task.png", dpi=110)
    plt.close(fig)


def multitask_plot(report: dict, sst: dict | None, out: Path) -> None:
    """Per task: validation headline vs iteration of that task's own batches, joint vs single-task."""
    runs = report["runs"]
    tasks = list(runs["fully_joint"]["curves"]) if "fully_joint" in runs else []
    fig, axes = plt.subplots(1, len(tasks), figsize=(4 * len(tasks), 3.6))
    for ax, t in zip(axes, tasks):
        j = runs["fully_joint"]["curves"][t]
        # fully joint round-robin: each task gets one batch in len(tasks) iterations
        ax.plot([p[0] / len(tasks) for p in j], [p[2] for p in j], marker="o", ms=3, label="fully joint")
        single = runs.get(f"single:{t}", {}).get("curves", {}).get(t)
        if single is None and t == "sst" and sst:
            single = sst["curve"]
        if single:
            ax.plot([p[0] for p in single], [p[2] for p in single], marker="s", ms=3, label="single-task")
        ax.set_title(t)
        ax.set_xlabel("batches of this task")
        ax.grid(alpha=0.3)
    if tasks:
        axes[0].set_ylabel("validation headline metric")
        axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "multitask_curves.png", dpi=110)
    plt.close(fig)
    (out / "multitask.json").write_text(json.dumps(report, indent=1), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    ap.add_argument("--out", default=str(ROOT / "docs" / "results"))
    ap.add_argument("--sst-label", default="MQAN single-task", help="legend of the SST run")
    ap.add_argument("--compare", action="append", default=[], metavar="REPORT=LABEL",
                    help="an earlier SST report in the workdir drawn dashed, e.g. report-sst-previous.json=\"d=200\"")
    ap.add_argument("--multitask-report", default="report-multitask.json", help="report file name in the workdir")
    args = ap.parse_args()
    work, out = Path(args.workdir), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sst = json.loads((work / "report-sst.json").read_text()) if (work / "report-sst.json").exists() else None
    others = []
    for spec in args.compare:
        name, _, label = spec.partition("=")
        others.append(json.loads((work / name).read_text()) | ({"label": label} if label else {}))
    if sst:
        sst_plot(sst | {"label": args.sst_label}, out, others)
    if (work / args.multitask_report).exists():
        multitask_plot(json.loads((work / args.multitask_report).read_text()), sst, out)


if __name__ == "__main__":
    main()
