"""The plan of the issue-45 grid: for every step of Table 2, every finding of Table 3 and every zero-shot row, how
many seeds a side and how many iterations it needs so that its minimum detectable effect (eval/power.py, 80%
power, two-sided 5%) falls below the paper's effect, read from what the records say.

    .venv/bin/python -m experiments.plan            # docs/results/records/plan.json (then `make results`)
    .venv/bin/python -m experiments.plan runs       # the planned runs, one a line, for experiments/grid.sh

The variance of a step's change with S seeds a side is, as in eval/power.py's two-level model,

    (seed variance of side a + of side b) / S  +  the examples' variance of the mean change,

the first from the spread of the recorded seeds (pooled over every cell of the task, which share the recipe),
the second, which no count of seeds lowers, from the runs' per-example records where every run kept one
(eval.power.examples_variance, on the clusters' totals), else from a stated assumption (`ASSUMED`): each side's
per-example scores at the largest variance a score bounded by 0 and 100 with that mean can have (Bhatia & Davis 2000:
m (100 - m)), the two sides' errors independent and the examples unclustered. For scores of 0 or 100 (EM)
that bound is the binomial variance itself; for the paired change of two models that err on the same
examples it overstates the variance, and clustering understates it: the grid's per-example records replace
the assumption on the next planning. The seeds are the fewest S (at least MIN_SEEDS, at most MAX_SEEDS) whose
MDE, with Student's t of 2(S - 1) degrees of freedom, is below the target; where no S up to MAX_SEEDS reaches
it (the examples alone keep the MDE near or above it) the step gets MIN_SEEDS and is planned "underpowered",
with the MDE the examples alone allow beside the target.

The target is the size of the paper's change; for zero-shot, whose paper figure is "only a small drop", the
distance of the renamed side from its floor (the question the verdict asks first: is it clear of the floor,
above or below?), a one-sided design: the renamed side's mean against a fixed floor, its seed variance that of
the group's renamed EMs (not doubled; t of S - 1 degrees of freedom), its examples' share that of its own mean.
Iterations: the recorded budget, doubled where a side's validation curve still rises over the last third of it
(eval.verdict.still_rising), since its best figure is not yet final; where that is unknown (no curve kept); and
where no run of a side got above its floor while the paper's figure lies above it (`undertrained`).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
from typing import Sequence

from eval.power import ALPHA, POWER, examples_variance, mde
from experiments.results import examples, records, table2, table3, zero_shot

MIN_SEEDS = 5  # the floor: at least 5 seeds a side
MAX_SEEDS = 20
ASSUMED = ("each side's per-example variance at its bound for a 0-100 score of mean m, m (100 - m) (Bhatia-Davis), "
           "the two sides' errors independent, the examples unclustered")
ASSUMED_ONE_SIDE = ("the side's per-example variance at its bound for a 0-100 score of mean m, m (100 - m), the "
                    "examples unclustered")
PATH = records.RECORDS / "plan.json"


def pooled_variance(cells: Sequence[Sequence[float]]) -> float | None:
    """The pooled within-cell variance of seed values (each cell one configuration's seeds); None without two
    seeds in any cell or without spread."""
    dof = sum(len(c) - 1 for c in cells if len(c) > 1)
    if dof == 0:
        return None
    found = sum((len(c) - 1) * statistics.variance(c) for c in cells if len(c) > 1) / dof
    return found or None


def assumed_example_variance(means: Sequence[float], n: int) -> float:
    """The variance of a mean change over n examples under `ASSUMED` (the sides' means `means`)."""
    return sum(m * (100.0 - m) for m in means) / n


def measured_example_variance(a, b, clusters) -> float:
    """The examples' variance of the mean change b - a from the runs' per-example records (clustered)."""
    return examples_variance(a.values[:, :, 0], b.values[:, :, 0], clusters)


def design_mde(seed_var: float, example_var: float, seeds: int, sides: int = 2) -> float:
    """The MDE with `seeds` a side (t of sides (seeds - 1) degrees of freedom); `seed_var` is the seeds' variance
    summed over the sides (one side: a mean against a fixed floor)."""
    return mde(math.sqrt(seed_var / seeds + example_var), ALPHA, POWER, df=sides * (seeds - 1.0))


def plan_step(seed_var: float, example_var: float, target: float, sides: int = 2) -> dict:
    """The seeds a step needs and the MDE it gets (`reachable` False: the examples alone keep it above)."""
    for seeds in range(MIN_SEEDS, MAX_SEEDS + 1):
        if design_mde(seed_var, example_var, seeds, sides) < target:
            return {"seeds": seeds, "mde": design_mde(seed_var, example_var, seeds, sides), "reachable": True}
    return {"seeds": MIN_SEEDS, "mde": design_mde(seed_var, example_var, MIN_SEEDS, sides), "reachable": False,
            "examples_mde": mde(math.sqrt(example_var), ALPHA, POWER)}


def entry(table: str, name: str, task: str, target: float, paper: float | None, seed_cells, seed_var_of,
          example_var: float, example_from: str, n: int, rising: bool | None, iterations: int, sides: int = 2,
          at_floor: bool = False) -> dict:
    """One step's plan with what it was read from (`sides` 1: one side's mean against a fixed floor). The budget
    is doubled where a side still rose, where that is unknown (no curve kept) and where a side's every run lies
    at or under its floor while the paper's figure is above it (`at_floor`, `undertrained`: at that budget its
    verdict would be about the floor, "not tested" or "fails", not about the paper's change)."""
    seed_var = pooled_variance(seed_cells)
    if seed_var is None:
        raise records.RecordError(f"{table} {name}: no two seeds of any cell of {task} differ; run a second seed "
                                  "before planning (a spread of 0 is not evidence of no noise)")
    found = plan_step(sides * seed_var, example_var, abs(target), sides)
    return {"table": table, "step": name, "task": task, "paper": paper, "target": round(abs(target), 2),
            "seeds_now": min(len(c) for c in seed_var_of), "seed_sd": round(math.sqrt(seed_var), 3),
            "example_sd_of_mean": round(math.sqrt(example_var), 3), "example_variance_from": example_from,
            "examples": n, "rising": rising, "at_floor": at_floor, "iterations_now": iterations,
            "iterations": iterations * (1 if rising is False and not at_floor else 2),
            **{k: (round(v, 2) if isinstance(v, float) else v) for k, v in found.items()}}


def example_part(record_name: str, names: tuple[list, list], task: str, means: Sequence[float],
                 n: int) -> tuple[float, str]:
    """(the examples' variance of the mean change, where it came from)."""
    kept = [[examples.load(record_name, r) for r in side] for side in names]
    (a, clusters), (b, _) = (examples.side(found, task) for found in kept)
    if a is not None and b is not None and a.kind == "mean" and examples.same_examples(*kept, task):
        return measured_example_variance(a, b, clusters), "measured (per-example records)"
    return assumed_example_variance(means, n), ASSUMED


def one_side_example_part(record_name: str, names: list, task: str, mean: float, n: int) -> tuple[float, str]:
    """(the examples' variance of one side's mean, where it came from): for a side judged against a fixed floor."""
    values, clusters = examples.side([examples.load(record_name, r) for r in names], task)
    if values is not None and values.kind == "mean":
        return examples_variance(values.values[:, :, 0], None, clusters), "measured (per-example records)"
    return mean * (100.0 - mean) / n, ASSUMED_ONE_SIDE


def undertrained(runs: Sequence[float], floor: float, paper: float) -> bool:
    """Whether no run of a side got above its floor where the paper's figure lies above it: more iterations first
    (where the paper itself is at the floor, as on MWSC, more of them are not expected to lift it)."""
    return max(runs) <= floor < paper


def either(rising: Sequence[bool | None]) -> bool | None:
    """Whether a step's sides still rose: True if one did, None if unknown for one (and none did), else False."""
    return True if True in rising else None if None in rising else False


def table2_steps(record: dict, floors: dict) -> list[dict]:
    out = []
    for task in table2.TASKS:
        cells = [table2.cell_values(record, task, v) for v in table2.VARIANTS]
        n = floors[task]["examples"]
        for i, (before, after) in enumerate(zip(table2.VARIANTS, table2.VARIANTS[1:])):
            paper = table2.PAPER[task][i + 1] - table2.PAPER[task][i]
            sides = (cells[i], cells[i + 1])
            names = tuple([r.get("name") for r in table2.runs_of(record, task, v)] for v in (before, after))
            var, source = example_part("table2", names, task, [statistics.mean(s) for s in sides], n)
            rising = either([table2.rising(record, task, v) for v in (before, after)])
            low = any(undertrained(side, floors[task]["floor"], table2.PAPER[task][j])
                      for side, j in zip(sides, (i, i + 1)))
            out.append(entry("table2", f"{table2.NAMES[before]} → {table2.NAMES[after]}", task, paper, paper, cells,
                             sides, var, source, n, rising, table2.iterations(record, task)[1], at_floor=low))
    return out


def table3_steps(record: dict, floors: dict) -> list[dict]:
    out = []
    for strategy, task, text in table3.FINDINGS:
        base, other = table3.PAPER["fully_joint"], table3.PAPER[strategy]
        paper = sum(other.values()) - sum(base.values()) if task == "sum" else other[task] - base[task]
        tasks = table3.TASKS if task == "sum" else (task,)
        names = tuple([r.get("name") for r in record["runs"] if r["strategy"] == s] for s in ("fully_joint", strategy))
        parts = [example_part("table3", names, t, [statistics.mean(table3.scores(record, s, t))
                                                   for s in ("fully_joint", strategy)], floors[t]["examples"])
                 for t in tasks]
        var = sum(v for v, _ in parts)
        source = parts[0][1] if len({s for _, s in parts}) == 1 else "; ".join(f"{t}: {s}" for t, (_, s) in zip(tasks, parts))
        cells = [table3.scores(record, s, task) for s in table3.STRATEGIES]
        sides = (table3.scores(record, "fully_joint", task), table3.scores(record, strategy, task))
        rising = either([r["still_rising"].get(t) for r in record["runs"] if r["strategy"] in ("fully_joint", strategy)
                         for t in (table3.TASKS if task == "sum" else (task,))])
        bound = table3.floor(floors, task) if task != "sum" else None
        low = bound is not None and any(undertrained(side, bound, table3.PAPER[s][task])
                                        for side, s in zip(sides, ("fully_joint", strategy)))
        out.append(entry("table3", text, task, paper, paper, cells, sides, var, source,
                         sum(floors[t]["examples"] for t in tasks), rising, record["iterations"], at_floor=low))
    return out


def zero_shot_steps(record: dict, floors: dict, table3_record: dict) -> list[dict]:
    out = []
    for group in record["groups"]:
        found = zero_shot.models(group)
        trained = [m[zero_shot.TRAINED]["em"] for _, m in found]
        budget = re.search(r"--iterations (\d+)", group["command"])
        iterations = int(budget.group(1)) if budget else table3_record["iterations"]
        rising = (either([v for r in table3_record["runs"] for v in r["still_rising"].values()]) if budget is None
                  else either(list(group.get("still_rising", {None: None}).values())))
        renamed_cells = [[m[task]["em"] for _, m in found] for task in zero_shot.RENAMED]
        keys = [key for key, _ in group["models"]]
        for (task, name), renamed in zip(zero_shot.RENAMED.items(), renamed_cells):
            n = floors[task]["examples"]
            var, source = one_side_example_part(f"zero_shot/{group['record']}", keys, task,
                                                statistics.mean(renamed), n)
            target = statistics.mean(renamed) - floors[task]["floor"]
            out.append(entry("zero_shot", f"{group['name']}: {name}", task, target, None, renamed_cells,
                             [trained, renamed], var, source, n, rising, iterations, sides=1))
    return out


SEEDS = (123, 7, 11, 5, 1, 2, 3, 4, 6, 8, 9, 10, 12, 13, 14, 15, 16, 17, 18, 19)  # the recorded ones first


def runs(steps: list[dict]) -> dict:
    """What to run: per table and task (Table 3: its five-task runs; zero-shot: per group) the most seeds and
    iterations any of its steps needs."""
    out: dict = {}
    for s in steps:
        key = s["step"].split(":")[0] if s["table"] == "zero_shot" else s["task"] if s["table"] == "table2" else "all"
        cell = out.setdefault(s["table"], {}).setdefault(key, {"seeds": 0, "iterations": 0})
        cell["seeds"], cell["iterations"] = max(cell["seeds"], s["seeds"]), max(cell["iterations"], s["iterations"])
    return out


def make() -> dict:
    """The plan from the committed records."""
    steps = (table2_steps(records.load("table2"), records.floors()) +
             table3_steps(records.load("table3"), records.floors("table3")) +
             zero_shot_steps(records.load("zero_shot"), records.floors(), records.load("table3")))
    return {"what": "the issue-45 grid's plan: seeds and iterations per step so that its MDE is below the paper's "
                    "effect (experiments/plan.py)", "command": "python -m experiments.plan",
            "source": "docs/results/records/table2.json, table3.json, zero_shot.json (with the zero-shot JSON files), "
                      "floors.json and the per-example records under docs/results/records/examples/", "alpha": ALPHA,
            "power": POWER, "assumed": ASSUMED, "assumed_one_side": ASSUMED_ONE_SIDE, "min_seeds": MIN_SEEDS,
            "max_seeds": MAX_SEEDS, "seeds": list(SEEDS),
            "steps": steps, "planned_runs": runs(steps)}


def recorded_table2() -> dict[str, int]:
    """Each Table 2 run in the committed record, its runs and those waiting in `pending`, with its iterations:
    a run recorded at the plan's budget is done on any machine (grid.sh's own check sees only its GRID_OUT)."""
    record = records.load("table2")
    found = record["runs"] + [r for e in record.get("pending", {}).values() for r in e["runs"]]
    done: dict[str, int] = {}
    for r in found:
        its = r.get("iterations") or record["iterations"][r["task"]]
        done[r["name"]] = max(done.get(r["name"], 0), its)
    return done


def run_lines(plan: dict, recorded_too: bool = False) -> list[str]:
    """`table task variant seed iterations` for every planned run of Table 2 not in its record at the planned
    iterations (every one with `recorded_too`), of Table 3 (task "all": its five tasks; variant: the strategy) and of the single-task zero-shot
    groups (the five-task zero-shot group asks Table 3's runs)."""
    lines = []
    done = {} if recorded_too else recorded_table2()
    for task, cell in plan["planned_runs"].get("table2", {}).items():
        lines += [f"table2 {task} {v} {seed} {cell['iterations']}" for seed in plan["seeds"][:cell["seeds"]]
                  for v in table2.VARIANTS if done.get(f"{task}-{v}-s{seed}", 0) < cell["iterations"]]
    for task, cell in plan["planned_runs"].get("table3", {}).items():
        lines += [f"table3 {task} {s} {seed} {cell['iterations']}" for seed in plan["seeds"][:cell["seeds"]]
                  for s in table3.STRATEGIES]
    commands = {g["name"]: g["command"] for g in records.load("zero_shot")["groups"]}
    for group, cell in plan["planned_runs"].get("zero_shot", {}).items():
        task = re.search(r"--task (\S+)", commands[group])
        if task:
            lines += [f"zero_shot {task.group(1)} mqan {seed} {cell['iterations']}"
                      for seed in plan["seeds"][:cell["seeds"]]]
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="write", choices=("write", "runs"),
                    help="write: docs/results/records/plan.json; runs: print the planned runs (from plan.json)")
    ap.add_argument("--all", action="store_true",
                    help="runs: Table 2's runs recorded at the planned budget too (a rehearsal, or rerunning them on "
                         "another machine)")
    args = ap.parse_args(argv)
    if args.what == "runs":
        print("\n".join(run_lines(records.load("plan"), args.all)))
        return 0
    try:
        plan = make()
    except records.RecordError as exc:
        raise SystemExit(f"error: {exc}") from None
    PATH.write_text(json.dumps(plan, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {PATH.relative_to(records.ROOT)}: {len(plan['steps'])} steps; runs {json.dumps(plan['planned_runs'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
