"""docs/results/issue10.md: issue 10's table (GloVe recipe, single-task and fully joint, before and after) from
docs/results/issue10.json, with each task's floor from records/floors.json (eval/floors.py) in place of the JSON's majority answer."""
from __future__ import annotations

from experiments.results import records
from experiments.results.render import floor_cell, floor_of, judge, num, rising_until, table

PAGE = "docs/results/issue10.md"
TEMPLATE = "issue10.md"
LABELS = {"sst": "SST EM", "woz.en": "WOZ joint goal EM", "srl": "QA-SRL nF1", "schema": "MWSC EM"}


def target(row: dict, floor: dict | None) -> str:
    """The issue's target, or for a task without one: above its floor."""
    if row["target"] is not None:
        return f">= {row['target']:.0f}"
    return f"> floor {num(floor_of(floor))}" if floor else "-"


def sides_rising(record: dict, task: str) -> list[bool]:
    """Whether the single-task curve still rose up to the iteration compared, and the joint curve to its end."""
    row = record["rows"][task]
    return [rising_until(record["single"][task]["curve"], row["single_at_iteration"]),
            rising_until(record["joint"]["curves"][task])]


def joint_verdict(record: dict, task: str, floor: dict | None) -> str:
    """eval/verdict.py on fully joint minus single-task at the same own batches (one run a side)."""
    row = record["rows"][task]
    _, said = judge([row["single_at_same_batches"]], [row["joint_last"]], 0.0, floor=floor_of(floor),
                    rising=sides_rising(record, task))
    return said


def results_table(record: dict | None = None, floors: dict | None = None) -> str:
    """The table: target, before and after single-task and fully joint, joint minus single, its verdict."""
    record = record or records.load("issue10")
    floors = floors if floors is not None else records.floors()
    rows = []
    for task, label in LABELS.items():
        r = record["rows"][task]
        rows.append([label, target(r, floors.get(task)), num(r["before_single"]),
                     f"{num(r['single_best'])} ({r['single_best_iteration']}, {num(r['single_best_minutes'])})",
                     num(r["before_joint"]), f"{num(r['joint_last'])} ({r['joint_own_batches']:.0f})",
                     num(r["single_at_same_batches"]), num(r["joint_last"] - r["single_at_same_batches"], sign=True),
                     floor_cell(floors.get(task)), joint_verdict(record, task, floors.get(task))])
    return table(["task", "target", "before: single-task", "after: single-task best (iteration, min)",
                  "before: fully joint", "after: fully joint, end (own batches)", "single-task at the same own batches",
                  "joint − single", "floor (strongest trivial)", "verdict (eval/verdict.py)"], rows, "lllllllrll")


def values() -> dict[str, str]:
    """The placeholders of templates/issue10.md."""
    return {"results_table": results_table()}
