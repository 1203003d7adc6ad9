"""The plan of the issue-45 grid on the Table 2, Table 3 and zero-shot pages: per step, what the records say
(seeds, their spread, the examples' share of the noise and where it came from, a curve still rising) and what
experiments/plan.py planned from it (docs/results/records/plan.json): "k seeds x n iterations, MDE x at 80%
power vs the paper's y"."""
from __future__ import annotations

from experiments.results import records
from experiments.results.render import num, table

ONE_DESIGN_TWO_MDES = (
    "A plan's MDE and the verdict table's for the same seeds differ: the plan's comes from variance components "
    "(the seeds' spread pooled over every cell of the task, the examples' part from the clusters' totals with the "
    "seed x example noise taken out), the verdict's from the step's own two sides by the two-level bootstrap "
    "corrected for few seeds (eval/clustered.py), which counts the seed x example noise at both levels "
    "(conservative: Owen 2007). The verdicts use the bootstrap's.")


def cell(step: dict) -> str:
    """'5 seeds × 4,800 iterations: MDE 4.5 vs the paper's 7.0' (and why where it cannot be powered)."""
    target = "the paper's" if step["paper"] is not None else "the floor distance"
    said = (f"{step['seeds']} seeds × {step['iterations']:,} iterations: MDE {num(step['mde'])} at 80% power vs "
            f"{target} {num(step['target'])}")
    if not step["reachable"]:
        said += (f"; underpowered at any count of seeds up to the plan's maximum (the examples alone give "
                 f"MDE {num(step['examples_mde'])})")
    return said


def budget_note(step: dict) -> str:
    """Why the plan doubled a step's budget: ' (rising)', ' (rising unknown)', ' (at its floor)'."""
    said = {True: ["rising"], None: ["rising unknown"], False: []}[step["rising"]]
    said += ["at its floor"] if step.get("at_floor") else []
    return f" ({'; '.join(said)})" if said else ""


def section(table_name: str, plan: dict | None = None) -> str:
    """The plan's table for one page."""
    plan = plan or records.load("plan")
    rows = []
    for s in plan["steps"]:
        if s["table"] != table_name:
            continue
        measured = s["example_variance_from"].startswith("measured")
        rows.append([s["task"], s["step"], str(s["seeds_now"]), num(s["seed_sd"], 2),
                     num(s["example_sd_of_mean"], 2) + ("" if measured else " (assumed)"),
                     f"{s['iterations_now']:,}" + budget_note(s), cell(s)])
    of = "the renamed mean" if table_name == "zero_shot" else "the mean change"
    return table(["task", "step", "seeds now", "seed sd (pooled)", f"examples' sd of {of}",
                  "iterations now", "planned"], rows, "llrrrrl") + "\n\n" + ONE_DESIGN_TWO_MDES

