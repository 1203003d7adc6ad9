"""docs/results/multitask.md: fully joint against single-task MQAN with embeddings learned from scratch, from
docs/results/multitask.json (earlier settings) and multitask_recipe.json (the SST recipe), with each
task's floor (records/floors.json) and eval/verdict.py's verdict on each joint-against-single comparison. The
single-task curve is read at the joint run's own batches, interpolated as issue10.matched does."""
from __future__ import annotations

from experiments.results import glove, records
from experiments.results.issue10 import matched
from experiments.results.render import floor_cell, floor_of, judge, num, rising_until, table

PAGE = "docs/results/multitask.md"
TEMPLATE = "multitask.md"
TASKS = {"sst": "SST (EM)", "woz.en": "WOZ (joint goal EM)", "srl": "QA-SRL (nF1)", "schema": "MWSC (EM)"}


def single_cell(curve: list, batches: float) -> str:
    """Single-task at the joint run's own batches: interpolated, with the two validations around that point
    (issue10.matched), or where the run ended before as many batches."""
    found = matched(curve, batches)
    if found is None:
        return f"- (run ended at {curve[-1][0]:,})"
    value, (i0, v0), (i1, v1) = found
    if i0 == i1:
        return f"{num(value)} (validated at {i0:,})"
    return f"{num(value)} ({i0:,}: {num(v0)}; {i1:,}: {num(v1)})"


def row(record: dict, task: str, floors: dict) -> list[str]:
    """One task: joint best (own batches), single-task at the same own batches (interpolated), single-task end,
    verdict, floor."""
    joint = record["runs"]["fully_joint"]
    batches = joint["best"]["_iteration"] / len(TASKS)
    value = joint["best"][task]
    chance = floor_cell(floors.get(task))
    single = record["runs"].get(f"single:{task}")
    if single is None:
        return [TASKS[task], f"{num(value)} ({batches:.0f})", "not recorded", "not recorded", "-", chance]
    curve = single["curves"][task]
    end = f"{num(curve[-1][-1])} ({curve[-1][0]}, {num(single['minutes_at_last_validation'])} min)"
    found = matched(curve, batches)
    if found is None:
        said = "not compared: the single-task run ended before as many batches"
    else:
        # the single-task curve up to the point compared; the joint curve to its end
        rising = [rising_until(curve, batches), rising_until(joint["curves"][task])]
        _, said = judge([found[0]], [value], 0.0, floor=floor_of(floors.get(task)), rising=rising)
    return [TASKS[task], f"{num(value)} ({batches:.0f})", single_cell(curve, batches), end, said, chance]


def results_table(record: dict, floors: dict) -> str:
    """The four tasks of one record."""
    rows = [row(record, task, floors) for task in TASKS]
    return table(["task", "fully joint, best checkpoint (own batches)",
                  "single-task at the same own batches, interpolated (the validations around it)",
                  "single-task, end (iteration, minutes)", "joint - single: verdict (eval/verdict.py)",
                  "floor (strongest trivial)"], rows, "lrrrll")


def span(values: list[float], digits: int = 1) -> str:
    """'a' or 'a-b' at `digits` decimals."""
    low, high = num(min(values), digits), num(max(values), digits)
    return low if low == high else f"{low}-{high}"


def budget(minutes: list[float]) -> str:
    """Budgets in minutes: whole minutes where every one is whole, else one decimal."""
    return span(minutes, 0 if all(float(m).is_integer() for m in minutes) else 1)


def joint_facts(record: dict, prefix: str) -> dict[str, str]:
    """The joint run's budget, minutes at its last validation, iterations and own batches per task; the
    single-task runs' budgets and minutes at their last validations."""
    joint = record["runs"]["fully_joint"]
    singles = [r for k, r in record["runs"].items() if k.startswith("single:")]
    return {f"{prefix}_minutes": budget([joint["minutes_budget"]]),
            f"{prefix}_last_minutes": num(joint["minutes_at_last_validation"]),
            f"{prefix}_iterations": f"{joint['last_iteration']:,}",
            f"{prefix}_batches": f"{joint['last_iteration'] / len(TASKS):.0f}",
            f"{prefix}_single_budget": budget([r["minutes_budget"] for r in singles]),
            f"{prefix}_single_minutes": span([r["minutes_at_last_validation"] for r in singles]),
            f"{prefix}_runs": ", ".join(f"`{r['run']}`" for r in record["runs"].values())}


def where(value: float, floor: float) -> str:
    """'under', 'at' or 'above' the floor, at the one decimal the page prints."""
    shown, level = round(value, 1), round(floor, 1)
    return "under" if shown < level else "at" if shown == level else "above"


def recipe_facts(recipe: dict, floors: dict) -> dict[str, str]:
    """SST and MWSC in the recipe's joint run: at its best checkpoint, against their floors, and MWSC at the end."""
    joint = recipe["runs"]["fully_joint"]
    best, majority, floor = joint["best"], floors["sst"]["floors"]["constant answer"], floors["schema"]["floor"]
    end = joint["curves"]["schema"][-1]
    return {"recipe_best_iteration": f"{best['_iteration']:,}", "recipe_sst": num(best["sst"]),
            "recipe_sst_where": where(best["sst"], majority), "sst_majority": num(majority),
            "recipe_mwsc": num(best["schema"]), "recipe_mwsc_where": where(best["schema"], floor),
            "recipe_mwsc_end": num(end[-1]), "recipe_end_iteration": f"{end[0]:,}", "mwsc_floor": num(floor)}


def setup_facts(early: dict, recipe: dict) -> dict[str, str]:
    """The machine, the Ray workers, and the earlier runs' model and optimizer settings, as the records hold them
    (`model_defaults`: params.yaml's at the runs' commits, from git history; else not recorded)."""
    joint = early["runs"]["fully_joint"]["overrides"]
    workers = {glove.workers_text(r["runs"]) for r in (early, recipe)}
    model = early.get("model_defaults") or {}
    init = model.get("embedding_init")
    return {"machine": glove.machine_text(early) if glove.machine_text(early) == glove.machine_text(recipe) else
            f"earlier settings: {glove.machine_text(early)}; the recipe: {glove.machine_text(recipe)}",
            "workers": workers.pop() if len(workers) == 1 else "; ".join(glove.workers_text(r["runs"])
                                                                          for r in (early, recipe)),
            "early_d": str(model.get("dimension", "not recorded")),
            "early_init": f"trained embeddings initialised from {init}" if init else
                          "embeddings whose initialisation was not recorded",
            "early_model_from": "the defaults at the runs' commits, from git history: multitask.json's `model_defaults`"
                                if model else "not recorded", "early_lr": f"{joint['train.lr']:g}",
            "early_tokens": f"{joint['train.token_budget']:,}"}


def values(floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/multitask.md."""
    floors = floors if floors is not None else records.floors()
    early, recipe = records.load("multitask"), records.load("multitask_recipe")
    return {"early_table": results_table(early, floors), "recipe_table": results_table(recipe, floors),
            **joint_facts(early, "early"), **joint_facts(recipe, "recipe"), **recipe_facts(recipe, floors),
            **setup_facts(early, recipe),
            "early_date": early["date"], "early_commit": early["commit"], "recipe_date": recipe["date"],
            "recipe_commit": recipe["commit"]}
