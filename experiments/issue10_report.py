"""Tables and curves of the issue-10 runs (experiments/issue10_runs.sh) for the README.

Single-task curves against the fully joint run's, on the x axis of each task's *own* batches (the joint
run is round-robin over four tasks, one batch each per round: own batches = iteration / 4), and the
table before (the README's earlier runs) / after, with the joint run compared to single-task at the same
number of own batches.

    .venv/bin/python -m experiments.issue10_report          # -> docs/results/issue10.{md,png,json}
"""
from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "checkpoints" / "readme-experiment"
TASKS = ["sst", "woz.en", "srl", "schema"]
NAMES = {"sst": "SST EM", "woz.en": "WOZ joint goal EM", "srl": "QA-SRL nF1", "schema": "MWSC EM"}
TARGETS = {"sst": 85.0, "woz.en": 85.0, "srl": 65.0, "schema": None}
# Before this issue (README, docs/results/multitask*.json): best single-task and fully joint results.
BEFORE_SINGLE = {"sst": 81.4, "woz.en": 71.7, "srl": 23.6, "schema": 50.0}
BEFORE_JOINT = {"sst": 61.0, "woz.en": 54.9, "srl": 19.6, "schema": 45.1}


def majority(processed: Path, task: str) -> float:
    """EM of always answering the most frequent validation answer."""
    from deca.schema import iter_rows

    answers = Counter(r["answer"] for r in iter_rows(processed, task, "validation"))
    return 100.0 * answers.most_common(1)[0][1] / sum(answers.values())


def at_batches(curve: list, batches: float) -> tuple[int, float] | None:
    """The last validation of a single-task curve at or before `batches` own batches."""
    done = [(it, v) for it, _, v in curve if it <= batches]
    return done[-1] if done else None


def refresh_curve(report: dict, task: str) -> None:
    """Re-read a single-task run's validation curve from MLflow (a run continued with `deca train --resume`
    has more points than its report). Minutes are training time: a pause between two validations longer
    than 3 minutes (the run was stopped, then resumed) counts as 3 minutes."""
    from deca.metric_logging import client
    from bench.workdir import headline_history

    c = client(f"sqlite:///{WORK / 'mlflow.db'}")
    start = c.get_run(report["mlflow_run_id"]).info.start_time
    points = headline_history(c, report["mlflow_run_id"], task)
    curve, minutes, last = [], 0.0, start
    for m in points:
        minutes += min((m.timestamp - last) / 60000, 3.0)
        last = m.timestamp
        curve.append([m.step, minutes, m.value])
    report["curve"] = curve


def summarize(single: dict, joint: dict | None, processed: Path) -> dict:
    rows = {}
    for t in TASKS:
        curve = single.get(t, {}).get("curve", [])
        best = max(curve, key=lambda p: p[2]) if curve else None
        row = {"before_single": BEFORE_SINGLE[t], "before_joint": BEFORE_JOINT[t], "target": TARGETS[t],
               "single_best": best[2] if best else None, "single_best_iteration": best[0] if best else None,
               "single_best_minutes": best[1] if best else None,
               "single_last_iteration": curve[-1][0] if curve else None}
        if t == "schema":
            row["majority"] = majority(processed, t)
        jc = (joint or {}).get("curves", {}).get(t, [])
        if jc:
            jbest = max(jc, key=lambda p: p[2])
            last_it, _, last_v = jc[-1]
            own = last_it / len(TASKS)
            ref = at_batches(curve, own)
            row.update(joint_best=jbest[2], joint_last=last_v, joint_own_batches=own,
                       single_at_same_batches=ref[1] if ref else None, single_at_iteration=ref[0] if ref else None)
        rows[t] = row
    return rows


def markdown(rows: dict) -> str:
    out = ["| task | target | before: single-task | after: single-task best (iteration, min) | before: fully joint "
           "| after: fully joint, end (own batches) | single-task at the same own batches | joint − single |",
           "|---|---|---|---|---|---|---|---|"]
    for t, r in rows.items():
        target = f">= {r['target']:g}" if r["target"] else f"> majority {r.get('majority', 0):.1f}"
        single = (f"{r['single_best']:.1f} ({r['single_best_iteration']}, {r['single_best_minutes']:.1f})"
                  if r["single_best"] is not None else "-")
        joint = f"{r['joint_last']:.1f} ({r['joint_own_batches']:.0f})" if r.get("joint_last") is not None else "-"
        ref = r.get("single_at_same_batches")
        gap = f"{r['joint_last'] - ref:+.1f}" if ref is not None and r.get("joint_last") is not None else "-"
        out.append(f"| {NAMES[t]} | {target} | {r['before_single']:.1f} | {single} | {r['before_joint']:.1f} | "
                   f"{joint} | {'-' if ref is None else f'{ref:.1f}'} | {gap} |")
    return "\n".join(out) + "\n"


def plot(single: dict, joint: dict | None, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(11, 7))
    for ax, t in zip(axes.flat, TASKS):
        curve = single.get(t, {}).get("curve", [])
        if curve:
            ax.plot([p[0] for p in curve], [p[2] for p in curve], marker=".", label="single-task")
        jc = (joint or {}).get("curves", {}).get(t, [])
        if jc:
            ax.plot([p[0] / len(TASKS) for p in jc], [p[2] for p in jc], marker=".", label="fully joint (4 tasks)")
        if TARGETS[t]:
            ax.axhline(TARGETS[t], color="grey", linestyle="--", linewidth=0.8, label="issue target")
        ax.axhline(BEFORE_SINGLE[t], color="red", linestyle=":", linewidth=0.8, label="before (single-task best)")
        ax.set_title(NAMES[t])
        ax.set_xlabel("the task's own batches")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    fig.suptitle("MQAN with GloVe 6B 50d + char n-grams (infra/params/glove.yaml), 2 CPU workers")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", type=Path, default=WORK)
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "results" / "issue10")
    args = ap.parse_args()
    single = {t: json.loads(p.read_text()) for t in TASKS if (p := args.workdir / f"report-single-{t}.json").exists()}
    for task, report in single.items():
        if report.get("mlflow_run_id"):
            refresh_curve(report, task)
    joint_file = args.workdir / "report-glove-multitask.json"
    joint = json.loads(joint_file.read_text())["runs"].get("fully_joint") if joint_file.exists() else None
    rows = summarize(single, joint, args.workdir / "processed")
    table = markdown(rows)
    print(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".md").write_text(table, encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps({"rows": rows, "single": single, "joint": joint}, indent=1),
                                             encoding="utf-8")
    plot(single, joint, args.out.with_suffix(".png"))


if __name__ == "__main__":
    main()
