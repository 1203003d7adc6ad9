"""docs/results/sst_single_task.md: single-task SST with embeddings learned from scratch (issue 5), from
docs/results/sst_single_task.json (the run's curve) and records/sst_linear_baseline.json."""
from __future__ import annotations

from experiments.results import glove, records
from experiments.results.render import num, table

PAGE = "docs/results/sst_single_task.md"
TEMPLATE = "sst_single_task.md"
TARGET = 80.0  # issue 5: >= 80 validation EM in <= 30 minutes
TARGET_MINUTES = 30.0


def at(curve: list, iteration: int) -> str:
    """The EM at `iteration` (with its minutes)."""
    point = next(p for p in curve if p[0] == iteration)
    return f"{num(point[2])} at iteration {iteration:,} ({num(point[1])} min)"


def reached(best: dict) -> str:
    """'Reached' when the best validation EM meets the target within its minutes, else 'Missed'."""
    return "Reached" if best["em"] >= TARGET and best["minutes"] <= TARGET_MINUTES else "Missed"


def linear(record: dict) -> tuple[str, str]:
    """The linear baseline's table and its best EM."""
    run = record["runs"][0]
    rows = [[setting, num(em)] for setting, em in run["scores"].items()]
    return table(["regularization", "validation EM"], rows), num(max(run["scores"].values()))


def values(record: dict | None = None, baseline: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/sst_single_task.md."""
    record = record or records.load("sst_single_task")
    baseline = baseline or records.load("sst_linear_baseline")
    floors = floors if floors is not None else records.floors()
    curve, best, final = record["curve"], record["best"], record["final"]
    majority = floors["sst"]["floors"]["constant answer"]
    over = [p for p in curve if p[2] >= TARGET]
    linear_table, linear_best = linear(baseline)
    run = baseline["runs"][0]
    return {"best": num(best["em"]), "best_iteration": f"{best['iteration']:,}", "best_minutes": num(best["minutes"]),
            "final": num(final["em"]), "final_iteration": f"{final['iteration']:,}",
            "final_minutes": num(final["minutes"]), "budget": num(record["minutes_budget"], 0),
            "target": num(TARGET, 0), "target_minutes": num(TARGET_MINUTES, 0), "reached": reached(best),
            "date": record["date"], "commit": record["commit"], "majority": num(majority),
            "plateau": glove.plateau(curve, majority),
            "at_600": at(curve, 600), "at_1000": at(curve, 1000), "over_count": str(len(over)),
            "over_first": f"{over[0][0]:,}", "over_last": f"{over[-1][0]:,}", "validations": str(len(curve)),
            "after_best": glove.after_best(curve), "machine": glove.machine_text(record),
            "workers": glove.workers_text({"the run": record}), "linear_settings": str(len(run["scores"])),
            "linear_table": linear_table, "linear_best": linear_best, "linear_date": baseline["date"],
            "linear_machine": records.describe_machine(baseline["machines"]["this"]),
            "linear_minutes": num(run["minutes"]), "linear_load": run["load"], "linear_commit": run["commit"]}
