"""docs/results/table2.md: Table 2 in miniature (S2S, +SAtt, +CAtt, +QPtr, single-task) from
docs/results/records/table2.json, with a verdict (eval/verdict.py) on every step of every task.

A cell is the mean ± sd over seeds of each run's best validation headline. Where the record keeps only the
mean and sd of two seeds (QA-SRL, WOZ: the runs' folders were not committed), the two values are recovered
from them (`two_values`), exact up to the summaries' rounding to 0.1, which is all Welch's interval needs.
"""
from __future__ import annotations

import math
from collections import Counter

from eval.clustered import cluster_unit
from eval.examples import metric_value
from eval.stats import t_quantile
from eval.steps import Judged, Step, judge_steps
from eval.verdict import rising_unknown, still_rising
from eval.compare import PAPER_TABLE2, TABLE2_NAMES, TABLE2_VARIANTS
from experiments.results import examples, pending, planned, records
from experiments.results.render import (floor_cell, floor_of, interval, mde_cell, mean_sd, num, p_cell, table,
                                        verdict_cell)

PAGE = "docs/results/table2.md"
TEMPLATE = "table2.md"
VARIANTS, NAMES, PAPER = TABLE2_VARIANTS, TABLE2_NAMES, PAPER_TABLE2  # the paper's Table 2 (eval/compare.py)
TASKS = {"sst": "SST (EM)", "srl": "QA-SRL (nF1)", "woz.en": "WOZ (joint goal EM)", "schema": "MWSC (EM)"}


def two_values(mean: float, sd: float) -> list[float]:
    """The two values whose mean and sample sd these are."""
    half = sd / math.sqrt(2)
    return [mean - half, mean + half]


def run_value(run: dict, task: str) -> float:
    """A run's best headline of `task`: unrounded from its per-example record where it kept one (what the
    verdict's two-level interval is made of), else the record's score (kept to 0.1)."""
    kept = examples.load("table2", run.get("name"))
    entry = kept["tasks"].get(task) if kept else None
    return metric_value(entry["kind"], examples.matrix(entry)) if entry else run["scores"][task]


def cell_values(record: dict, task: str, variant: str) -> list[float]:
    """Each seed's best headline of (task, variant) (`run_value`): from the runs that kept their scores, and for
    the two runs that kept only their mean and sd (`summaries`) the two values with that mean and sd, which give
    any later seeds' mean and sd exactly up to the summaries' rounding to 0.1 (the sum and the sum of squares are
    the same)."""
    runs = [r for r in record["runs"] if r["task"] == task and r["variant"] == variant]
    scored = [run_value(r, task) for r in runs if r["scores"]]
    unscored = [r["name"] for r in runs if not r["scores"]]
    if not unscored and scored:
        return scored
    if len(unscored) != 2:
        raise records.RecordError(f"table2: {task} {variant}: runs {unscored} without scores; a summary stands for two")
    summary = record["summaries"][task][variant]
    return two_values(summary["mean"], summary["sd"]) + scored


def run_rising(record: dict, run: dict) -> bool | None:
    """Whether one run was still rising: on its curve where it kept one, else the record's reading of its plot;
    None where it kept neither (unknown)."""
    if run["curve"]:
        budget = run.get("iterations") or record["iterations"][run["task"]]
        return run["still_rising"] is True or still_rising(run["curve"], budget)
    return run["still_rising"]


def rising(record: dict, task: str, variant: str) -> bool | None:
    """Whether (task, variant) was still rising (eval.verdict.still_rising). Where every run of it kept its curve
    at the same iterations, on the seeds' mean curve: the recipe's expected curve, the seeds' noise averaged (judged
    run by run, the more seeds a side has, the likelier one of them wiggles upward by chance). Else True when any
    run rose (`run_rising`), None (unknown) when none did but a run kept neither curve nor reading, else False."""
    runs = runs_of(record, task, variant)
    curves = [r["curve"] for r in runs if r["curve"]]
    if curves and len(curves) == len(runs) and all([s for s, _ in c] == [s for s, _ in curves[0]] for c in curves):
        mean = [[s, sum(c[i][1] for c in curves) / len(curves)] for i, (s, _) in enumerate(curves[0])]
        return still_rising(mean, iterations(record, task)[1])
    found = [run_rising(record, r) for r in runs]
    if True in found:
        return True
    return None if None in found else False


def results_table(record: dict, floors: dict, found: list | None = None) -> str:
    """Mean ± sd per task and variant, seeds, the paper and the task's floor; in brackets each step's change as
    eval/steps.py judged it (`judged`: from the runs' unrounded per-example means where they kept them), so that
    it is the verdict table's figure."""
    judged_change = {(t, after): j.change.interval.value for (t, _, _, after), j in (found or judged(record, floors))}
    rows = []
    for task, label in TASKS.items():
        cells, prev = [], None
        for v in VARIANTS:
            values = cell_values(record, task, v)
            mean = sum(values) / len(values)
            change = judged_change.get((task, v), None if prev is None else mean - prev)
            cells.append(mean_sd(values) + (f" ({change:+.1f})" if prev is not None else ""))
            prev = mean
        seeds = "/".join(str(len(cell_values(record, task, v))) for v in VARIANTS)
        rows.append([label, *cells, seeds, " / ".join(num(x) for x in PAPER[task]), floor_cell(floors.get(task))])
    return table(["task", *(NAMES[v] for v in VARIANTS), "seeds", "paper (single-task)", "floor (strongest trivial)"],
                 rows, "l" + "r" * 5 + "ll")


def runs_of(record: dict, task: str, variant: str) -> list[dict]:
    return [r for r in record["runs"] if r["task"] == task and r["variant"] == variant]


def iterations(record: dict, task: str) -> tuple[int, int]:
    """The fewest and the most iterations of `task`'s runs: each run's own, or for a run that does not record
    them (transcribed from an earlier page) the record's figure for the task."""
    its = pending.budgets(record, task)
    return min(its), max(its)


def budget(record: dict, task: str) -> str:
    low, high = iterations(record, task)
    return f"{low:,}" if low == high else f"{low:,} to {high:,}"


def step_of(record: dict, task: str, before: str, after: str, floor: float | None) -> Step:
    """One step of `task` for eval/steps.py: per-example samples where every run of both sides kept its record
    (docs/results/records/examples/table2/), else the seeds' values (a seed-only interval)."""
    paper = PAPER[task][VARIANTS.index(after)] - PAPER[task][VARIANTS.index(before)]
    kept = [[examples.load("table2", r.get("name")) for r in runs_of(record, task, v)] for v in (before, after)]
    (a, clusters), (b, _) = (examples.side(found, task) for found in kept)
    if a is None or b is None or not examples.same_examples(*kept, task):
        a = b = clusters = None
    return Step(f"{task} {before}->{after}", paper, a, b,
                (cell_values(record, task, before), cell_values(record, task, after)), clusters, floor,
                [rising(record, task, v) for v in (before, after)])


def judged(record: dict, floors: dict) -> list[tuple[tuple[str, str, str, str], Judged]]:
    """Every step of every task with runs, (task, label, before, after), judged together (eval/steps.py: Holm
    over the table's steps, each step's MDE)."""
    found = [(task, label, before, after) for task, label in TASKS.items()
             if any(r["task"] == task for r in record["runs"]) for before, after in zip(VARIANTS, VARIANTS[1:])]
    return list(zip(found, judge_steps([step_of(record, t, b, a, floor_of(floors.get(t))) for t, _, b, a in found])))


def steps(record: dict, floors: dict, found: list | None = None) -> tuple[str, Counter, dict[str, set[str]]]:
    """The verdict table (`judged`, or `found` where already judged): the paper's change, the change here [95%
    interval], MDE, Holm's p, the verdict; with the tally of verdicts and each task's set of verdicts."""
    rows, tally, by_task = [], Counter(), {}
    for (task, label, before, after), j in (found or judged(record, floors)):
        tally[j.verdict] += 1
        by_task.setdefault(task, set()).add(j.verdict)
        rows.append([label, f"{NAMES[before]} → {NAMES[after]}", f"{j.step.paper:+.1f}", interval(j.change.interval),
                     mde_cell(j), p_cell(j), verdict_cell(j, cluster_unit(task))])
    return table(["task", "step", "paper", "here [95% interval]", "MDE (80% power)", "Holm p",
                  "verdict (eval/verdict.py)"], rows, "llrrrrl"), tally, by_task


def mwsc_runs(record: dict) -> str:
    """Each MWSC run's best EM (iteration), minutes and curve."""
    rows = []
    for r in record["runs"]:
        if r["task"] == "schema" and r["curve"]:
            curve = ", ".join(num(v) if v else "0" for _, v in r["curve"])
            rows.append([f"{r['variant']} seed {r['seed']}", f"{num(r['scores']['schema'])} ({r['best_iteration']})",
                         num(r["minutes"]), curve])
    return table(["run", "best EM (iteration)", "minutes", "curve"], rows, "llrl")


def validation_points(record: dict, task: str) -> str:
    """When `task`'s runs validated: 'every N iterations' (and at the end) where every run validated on one
    interval, else the iterations of each run's curve."""
    gaps = {r["curve"][1][0] - r["curve"][0][0]
            for r in record["runs"] if r["task"] == task and len(r["curve"] or []) > 1}
    return f"every {gaps.pop():,} iterations and at the end" if len(gaps) == 1 else "the iterations of its curve"


def sst_runs(record: dict) -> str:
    """Each SST run's best EM (iteration), minutes to it and of the run, and its machine."""
    rows = [[f"{r['variant']} seed {r['seed']}", f"{num(r['scores']['sst'])} ({r['best_iteration']})",
             f"{num(r.get('minutes_to_best'))} / {num(r['minutes'])}", r["machine"]]
            for r in record["runs"] if r["task"] == "sst"]
    return table(["run", "best EM (iteration)", "minutes to best / of the run", "machine"], rows, "llrl")


GRID_EXPORT = "/tmp/grid-export"  # where experiments/grid.sh's runs were exported (its EXPORT)


def commands(record: dict) -> str:
    """The page's command block, from which runs kept a per-example record (experiments/grid.sh writes one for
    every run; experiments/table2.sh none): table2.sh for the others' tasks, and per machine the grid, with the plan
    its recorded runs were made under (`plan_then`: grid.sh itself runs the plan now in plan.json), and the import
    of its export."""
    older: dict = {}
    grid: dict = {}
    for r in record["runs"]:
        kept = (examples.DIR / "table2" / f"{r['name']}.json.gz").is_file()
        (grid.setdefault(r["machine"], {}) if kept else older).setdefault(r["task"], []).append(r)
    lines = []
    if older:
        lines += [f"bash experiments/table2.sh   # {words([TASKS[t].split(' (')[0] for t in older])}: "
                  "4 variants x the seeds in SEEDS",
                  ".venv/bin/python -m experiments.results.runs table2 <run folders> --machine <key>"
                  "   # into the record"]
    for machine, tasks in grid.items():
        env = "DEVICE=cuda" if record["machines"][machine].get("gpu") else "DEVICE=cpu PARALLEL=2"
        lines += [f'{env} TABLES=table2 TASKS="{" ".join(tasks)}" GRID_OUT=checkpoints/grid EXPORT={GRID_EXPORT} \\',
                  f"    bash experiments/grid.sh   # {words([TASKS[t].split(' (')[0] for t in tasks])} on `{machine}`, "
                  f"each with its per-example record: the record's runs, {plan_then(record, tasks)}, were the plan "
                  "then; it runs the plan now (docs/results/records/plan.json)",
                  f".venv/bin/python -m experiments.results.runs table2 "
                  + " ".join(f"{GRID_EXPORT}/{t}-*" for t in tasks) + f" --machine {machine} \\",
                  f"    --machine-file {GRID_EXPORT}/machine.json   # the grid's runs into the record"]
    return "\n      ".join([*lines, "make results   # this page, from docs/results/records/table2.json"])


def plan_then(record: dict, tasks: dict[str, list[dict]]) -> str:
    """'MWSC 5 seeds × 800 iterations, SST 5 seeds × 1,200': the seeds and iterations of each task's grid runs (the
    plan they were made under), from the runs themselves."""
    parts = []
    for task, runs in tasks.items():
        seeds = len({r["seed"] for r in runs})
        its = "/".join(f"{i:,}" for i in sorted({r.get("iterations") or record["iterations"][task] for r in runs}))
        parts.append(f"{TASKS[task].split(' (')[0]} {seeds} seed{'s' * (seeds != 1)} × {its}"
                     + (" iterations" if not parts else ""))
    return ", ".join(parts)


def machine_check(record: dict) -> str:
    """The +QPtr SST seed-11 run here against the same command's run on another machine (the zero-shot
    page's model), when both are recorded."""
    ours = next((r for r in record["runs"] if r["name"] == "sst-qptr-s11"), None)
    other = records.load("zero_shot_seeds").get("checkpoints/zero-shot/sst-s11")
    if ours is None or other is None:
        return ""
    return (f"The +QPtr seed-11 run is the zero-shot page's seed-11 SST model's command: on `{ours['machine']}` it "
            f"reached {num(ours['scores']['sst'])}, on the EPYC {num(other['sst']['em'])}. The same seed on another CPU "
            "gives another run, which is why a seed's four variants share a machine.")


def notes(by_task: dict[str, set[str]], task: str, when_untested: str) -> str:
    """`when_untested` when every step of `task` is not tested, else a pointer to the verdicts."""
    said = {s.split(":")[0] for s in by_task.get(task, ())}
    return when_untested if said == {"not tested"} else "See the verdicts above for which steps are tested."


def words(items: list) -> str:
    """'a', 'a and b', 'a, b and c'."""
    items = [str(x) for x in items]
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + " and " + items[-1]


def of_runs(count: int, total: int) -> str:
    """'every one of its 20' or '16 of its 20'."""
    return f"every one of its {total}" if count == total else f"{count} of its {total}"


def runs_of_seeds(seeds: list) -> str:
    """'8 runs of seeds 123 and 7', '1 run of seed 11'."""
    distinct = list(dict.fromkeys(seeds))
    return (f"{len(seeds)} run{'s' if len(seeds) != 1 else ''} of seed{'s' if len(distinct) != 1 else ''} "
            f"{words(distinct)}")


def rising_source(record: dict, task: str, plot: str) -> str:
    """Where `task`'s rising flags come from: the record's reading of `plot` (runs without a curve) and the runs'
    own curves; '`plot`' or 'their own curves' where one source gives them all."""
    runs = [r for r in record["runs"] if r["task"] == task]
    read = [r["seed"] for r in runs if not r["curve"] and r["still_rising"] is not None]
    curves = [r["seed"] for r in runs if r["curve"]]
    if not curves:
        return f"`{plot}`"
    if not read:
        return "their own curves"
    return f"`{plot}` for {runs_of_seeds(read)}, their own curves for {runs_of_seeds(curves)}"


def rising_text(record: dict, task: str, label: str, plot: str) -> str:
    """How many of `task`'s runs were still rising at their end (`run_rising`), from where (`rising_source`), and
    for how many that is unknown (a verdict then holds only if they were not: the rule reads unknown as not
    rising)."""
    found = [run_rising(record, r) for r in record["runs"] if r["task"] == task]
    up, unknown = found.count(True), found.count(None)
    source = rising_source(record, task, plot)
    if unknown == len(found):
        said = (f"**Whether {label} was still rising at the end is unknown**: none of its {len(found)} runs kept its "
                f"curve (`{plot}` below was drawn from them) and the record holds no reading of it")
    elif not up and not unknown:
        said = f"**None of {label}'s {len(found)} runs was still rising at its end** ({source})"
    else:
        said = f"**{label} was still rising at the end of {of_runs(up, len(found))} runs** ({source})"
        said += f"; for {unknown} it is unknown (no curve kept)" if unknown else ""
    if unknown and up < len(found):
        said += f", so a verdict on {label} holds only if those curves had stopped rising (else: not tested)"
    return said + "."


def held_if_flat(found: list) -> str:
    """The verdicts that hold only if an unknown side had stopped rising (eval.verdict.rising_unknown), per task:
    ' (the 3 on WOZ hold only if its curves, which were not kept, had stopped rising; else: not tested)'."""
    counts = Counter(TASKS[task].split(" (")[0] for (task, *_), j in found if rising_unknown(j.step.rising, j.verdict))
    if not counts:
        return ""
    held = words([f"the {n} on {label}" for label, n in counts.items()])
    return (f" ({held} hold{'s' if sum(counts.values()) == 1 else ''} only if {'its' if len(counts) == 1 else 'their'}"
            " curves, which were not kept, had stopped rising; else: not tested)")


def floors_text(found: dict, unit: str) -> str:
    """'every trivial answerer scores 0.0 <unit>' where they all score the same (floors.json), else the strongest."""
    scores = set(found["floors"].values())
    if len(scores) == 1:
        return f"every trivial answerer scores {num(found['floor'])} {unit}"
    return f"the strongest trivial answerer ({found['answerer']}) scores {num(found['floor'])} {unit}"


def mwsc_values(record: dict, floors: dict) -> dict[str, str]:
    """The MWSC bullet's figures: how many runs are at or below the floor, the highest's distance above it, and
    the variants whose every run lies below it."""
    floor, n_examples = floors["schema"]["floor"], floors["schema"]["examples"]
    mwsc = {v: cell_values(record, "schema", v) for v in VARIANTS}
    flat = [x for v in VARIANTS for x in mwsc[v]]
    above = round((max(flat) - floor) * n_examples / 100)
    under = [f"{NAMES[v]} ({num(min(x))}-{num(max(x))})" for v, x in mwsc.items() if x and max(x) < floor]
    return {"mwsc_low": num(min(flat)), "mwsc_high": num(max(flat)),
            "mwsc_below_of": of_runs(sum(x <= floor for x in flat), len(flat)),
            "mwsc_highest": (f"the highest is {above} validation example{'s' if above != 1 else ''} above it"
                             if above > 0 else "none is above it"),
            "mwsc_wholly_below": f" Every run of {words(under)} lies below it." if under else "",
            "mwsc_answerer": floors["schema"]["answerer"], "mwsc_floor": num(floor)}


PLOTS = {"srl": ("QA-SRL", "table2_srl.png"), "woz.en": ("WOZ", "table2_woz.png")}  # of runs whose curves are gone


def pending_text(record: dict, plan: dict) -> str:
    """What waits in the record's `pending` (experiments/results/pending.py): per task, the budget, the runs in
    and how many more the plan asks before they replace the task's runs."""
    parts = []
    for task, entry in record.get("pending", {}).items():
        n, left = len(entry["runs"]), len(pending.missing(record, plan, task, VARIANTS))
        order = {s: i for i, s in enumerate(plan["seeds"])}  # a seed the plan does not list goes last
        seeds = sorted({r["seed"] for r in entry["runs"]}, key=lambda s: (order.get(s, len(order)), s))
        up = sum(run_rising(record, r) is True for r in entry["runs"])
        parts.append(f"{TASKS[task].split(' (')[0]} at {entry['iterations']:,} iterations, the plan's budget: "
                     f"{runs_of_seeds([r['seed'] for r in sorted(entry['runs'], key=lambda r: seeds.index(r['seed']))])}"
                     f" in ({up} of them still rising over the last third of their curves, eval.verdict.still_rising),"
                     f" {left} more to come; the cells above use them once the plan's seeds are all in")
    if not parts:
        return "none: every finished run is in the tables."
    return ("; ".join(parts) + ". They wait in the record's `pending` with their curves and per-example records "
            "(docs/results/records/examples/table2/pending/), so that no cell mixes budgets and a run finished "
            "on a machine that is gone is kept.")


def plots(record: dict) -> str:
    """The plots kept of runs that kept no curve (each task's while it has such runs in the record)."""
    shown = {t: sorted({r["seed"] for r in record["runs"] if r["task"] == t and not r["curve"]}, reverse=True)
             for t in PLOTS}
    shown = {t: seeds for t, seeds in shown.items() if seeds}
    if not shown:
        return "No plot is kept: every run's curve is in the record."
    seeds = words(list(dict.fromkeys(s for found in shown.values() for s in found)))
    return (f"Plots kept from the runs of seeds {seeds} (not regenerated: those runs' curves were not committed):"
            + "".join(f"\n\n![{PLOTS[t][0]} curves]({PLOTS[t][1]})" for t in shown))


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/table2.md."""
    record = record or records.load("table2")
    floors = floors if floors is not None else records.floors()
    found = judged(record, floors)
    verdicts, tally, by_task = steps(record, floors, found)
    return {
        "date": record["date"], "source": record["source"], "plan_table": planned.section("table2"),
        "plan_min_seeds": str(records.load("plan")["min_seeds"]), "plan_assumed": records.load("plan")["assumed"],
        "machines": "; ".join(f"`{k}`: {records.describe_machine(m)}" for k, m in record["machines"].items()),
        "iters_schema": budget(record, "schema"), "iters_sst": budget(record, "sst"),
        "iters_woz": budget(record, "woz.en"), "iters_srl": budget(record, "srl"),
        "results_table": results_table(record, floors, found), "verdict_table": verdicts,
        "tally": ", ".join(f"{n} {v}" for v, n in sorted(tally.items())), "held_if_flat": held_if_flat(found),
        "n_steps": str(len(found)),
        "mwsc_note": notes(by_task, "schema", "The MWSC steps, the +CAtt drop and the +QPtr recovery included, are "
                                                "therefore not tests of the paper's claims."),
        "srl_note": notes(by_task, "srl", "Its steps compare how fast the variants start, not the converged "
                                          "models the paper compares."),
        **mwsc_values(record, floors), "woz_floor": floors_text(floors["woz.en"], "joint goal EM"),
        "srl_rising": rising_text(record, "srl", "QA-SRL", "table2_srl.png"),
        "woz_rising": rising_text(record, "woz.en", "WOZ", "table2_woz.png"),
        "plots": plots(record), "pending": pending_text(record, records.load("plan")),
        "machine_check": machine_check(record), "t_two_seeds": num(t_quantile(1)), "mwsc_runs": mwsc_runs(record),
        "mwsc_every": validation_points(record, "schema"), "sst_runs": sst_runs(record),
        "commands": commands(record),
    }
