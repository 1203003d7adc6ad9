"""Table 2 runs made at a budget its cells do not use yet.

When the plan doubles a task's budget (its curves still rose), the longer runs come in a few at a time: a 2-core
machine finishes a handful a session, and its kept states go with it. So a finished run at another budget than
the task's runs in the record waits in the record's `pending` (its per-example record under
docs/results/records/examples/table2/pending/) until every seed and variant the plan asks at that budget is in;
then all of them replace the task's runs at once, the old ones kept under `replaced`. No cell mixes budgets, and
no finished run is lost with the machine that made it.

    record["pending"] = {task: {"iterations": N, "runs": [run, ...]}}
"""
from __future__ import annotations

import shutil
from pathlib import Path

from experiments.results import examples


def pending_dir() -> Path:
    return examples.DIR / "table2" / "pending"


def budgets(record: dict, task: str) -> set[int]:
    """The iterations of `task`'s runs in the record (a run without them: the record's figure for the task)."""
    found = {r.get("iterations") or record.get("iterations", {}).get(task) for r in record["runs"]
             if r.get("task") == task}
    return found - {None}


def waits(record: dict, run: dict) -> bool:
    """Whether a new run goes to `pending`: its task has runs in the record, none of them at its budget."""
    found = budgets(record, run["task"])
    return bool(found) and run["iterations"] not in found


def stage(record: dict, run: dict, kept: dict | None) -> None:
    """Put `run` in the record's `pending` (in place of one of the same name; a budget other than the pending
    one's replaces what waited: the plan asks that budget now) and write its per-example record `kept`."""
    entry = record.setdefault("pending", {}).get(run["task"])
    if entry is None or entry["iterations"] != run["iterations"]:
        entry = record["pending"][run["task"]] = {"iterations": run["iterations"], "runs": []}
    entry["runs"] = [r for r in entry["runs"] if r["name"] != run["name"]] + [run]
    if kept is not None:
        examples.write(pending_dir() / f"{run['name']}.json.gz", kept)


def wanted(plan: dict, task: str, variants: tuple[str, ...]) -> tuple[int, set[tuple[str, int]]]:
    """The plan's budget for `task` and the (variant, seed) pairs it asks."""
    cell = plan["planned_runs"].get("table2", {}).get(task)
    if cell is None:
        return 0, set()
    return cell["iterations"], {(v, s) for s in plan["seeds"][:cell["seeds"]] for v in variants}


def missing(record: dict, plan: dict, task: str, variants: tuple[str, ...]) -> list[tuple[str, int]]:
    """The (variant, seed) pairs the plan asks of `task` at its pending budget that are not in yet (all of them
    when the plan asks another budget now), in the plan's order of seeds."""
    entry = record.get("pending", {}).get(task)
    its, want = wanted(plan, task, variants)
    if entry is not None and its == entry["iterations"]:
        want -= {(r["variant"], r["seed"]) for r in entry["runs"]}
    return sorted(want, key=lambda p: (plan["seeds"].index(p[1]), variants.index(p[0])))


def promote(record: dict, plan: dict, variants: tuple[str, ...]) -> tuple[list[str], list[tuple[Path, Path]]]:
    """Every task whose pending runs are all the plan asks replaces its runs with them (the old ones under
    `replaced`); returns the tasks promoted and the per-example records to move (src, dst): the old runs' to
    examples/table2/replaced/, the pending ones' into examples/table2/. The caller moves them once the record
    is written."""
    done, moves = [], []
    for task, entry in list(record.get("pending", {}).items()):
        if wanted(plan, task, variants)[0] != entry["iterations"] or missing(record, plan, task, variants):
            continue  # the plan asks another budget (or none) of the task, or more runs
        old = [r for r in record["runs"] if r["task"] == task]
        before = "/".join(f"{i:,}" for i in sorted(budgets(record, task)))
        record.setdefault("replaced", {})[f"{task} at {before} iterations"] = {
            "why": f"{task}: its runs at {before} iterations, replaced by the plan's {len(entry['runs'])} runs at "
                   f"{entry['iterations']:,} (docs/results/records/plan.json: the budget doubled where a curve "
                   "still rose); their per-example records are under examples/table2/replaced/.",
            "runs": old}
        record["runs"] = [r for r in record["runs"] if r["task"] != task] + entry["runs"]
        table2 = examples.DIR / "table2"
        moves += [(table2 / f"{r['name']}.json.gz", table2 / "replaced" / f"{r['name']}-{r.get('iterations')}.json.gz")
                  for r in old]
        moves += [(pending_dir() / f"{r['name']}.json.gz", table2 / f"{r['name']}.json.gz") for r in entry["runs"]]
        del record["pending"][task]
        done.append(task)
    if not record.get("pending"):
        record.pop("pending", None)
    return done, moves


def move_all(moves: list[tuple[Path, Path]]) -> None:
    """Copy every file first, then remove the sources: a failure part way leaves every file somewhere. The old
    runs' files go first, so a pending run of the same name does not land on one still to be moved."""
    copied = []
    for src, dst in moves:
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_name(dst.name + ".tmp")
            shutil.copyfile(src, tmp)
            copied.append((src, tmp, dst))
    for src, tmp, dst in copied:
        tmp.replace(dst)
    for src, _, dst in copied:
        if src != dst and not any(src == d for _, _, d in copied):
            src.unlink()
