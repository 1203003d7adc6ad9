"""docs/results/issue10.md: issue 10's table (GloVe recipe, single-task and fully joint, before and after) from
docs/results/issue10.json, with each task's floor from records/floors.json (eval/floors.py) in place of the JSON's
majority answer. Fully joint is compared with single-task at the same number of the task's own batches: the
single-task curve interpolated linearly between the two validations around that point, each of which gives
the difference's range."""
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


def matched(curve: list, batches: float) -> tuple[float, tuple, tuple] | None:
    """The single-task curve at `batches` iterations (its own batches): (value, (iteration, value) of the
    validation at or before it, of the one at or after it), interpolated linearly between those two; None
    where the curve does not reach `batches`."""
    points = [(p[0], p[-1]) for p in curve]
    before = [p for p in points if p[0] <= batches]
    after = [p for p in points if p[0] >= batches]
    if not before or not after:
        return None
    (i0, v0), (i1, v1) = before[-1], after[0]
    value = v0 if i1 == i0 else v0 + (v1 - v0) * (batches - i0) / (i1 - i0)
    return value, (i0, v0), (i1, v1)


def sides_rising(record: dict, task: str) -> list[bool]:
    """Whether the single-task curve still rose up to the point compared (the joint run's own batches), and
    the joint curve to its end."""
    row = record["rows"][task]
    return [rising_until(record["single"][task]["curve"], row["joint_own_batches"]),
            rising_until(record["joint"]["curves"][task])]


def joint_verdict(record: dict, task: str, floor: dict | None) -> str:
    """eval/verdict.py on fully joint minus single-task at the same own batches (one run a side)."""
    row = record["rows"][task]
    found = matched(record["single"][task]["curve"], row["joint_own_batches"])
    if found is None:
        return "not compared: the single-task run ended before as many batches"
    _, said = judge([found[0]], [row["joint_last"]], 0.0, floor=floor_of(floor), rising=sides_rising(record, task))
    return said


def matched_cells(record: dict, task: str) -> list[str]:
    """Single-task at the joint run's own batches (with the validations around it), and joint - single (with
    its difference against each of those validations)."""
    row = record["rows"][task]
    found = matched(record["single"][task]["curve"], row["joint_own_batches"])
    if found is None:
        return [f"- (run ended at {record['single'][task]['curve'][-1][0]:,})", "-"]
    value, (i0, v0), (i1, v1) = found
    joint = row["joint_last"]
    if i0 == i1:
        return [f"{num(value)} (validated at {i0:,})", num(joint - value, sign=True)]
    low, high = sorted((joint - v0, joint - v1))
    return [f"{num(value)} ({i0:,}: {num(v0)}; {i1:,}: {num(v1)})",
            f"{num(joint - value, sign=True)} ({num(low, sign=True)} to {num(high, sign=True)})"]


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
                     *matched_cells(record, task), floor_cell(floors.get(task)),
                     joint_verdict(record, task, floors.get(task))])
    return table(["task", "target", "before: single-task", "after: single-task best (iteration, min)",
                  "before: fully joint", "after: fully joint, end (own batches)",
                  "single-task at the same own batches, interpolated (the validations around it)",
                  "joint − single (against each of those validations)", "floor (strongest trivial)",
                  "verdict (eval/verdict.py)"], rows, "lllllllrll")


def values() -> dict[str, str]:
    """The placeholders of templates/issue10.md."""
    return {"results_table": results_table()}
