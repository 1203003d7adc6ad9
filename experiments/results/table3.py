"""docs/results/table3.md: Table 3 in miniature (fully joint, SQuAD-first anti-curriculum, curriculum) from
docs/results/records/table3.json, with eval/verdict.py's verdict on each of the paper's findings."""
from __future__ import annotations

from collections import Counter
from statistics import mean

from deca.registry import DECANLP
from eval.clustered import cluster_unit
from eval.compare import PAPER_TABLE3
from eval.steps import Judged, Step, judge_steps
from eval.verdict import NOT_TESTED, at_floor
from experiments.results import examples, planned, records
from experiments.results.table2 import floors_text, words
from experiments.results.render import floor_of, interval, mde_cell, mean_sd, num, p_cell, table, verdict_cell

PAGE = "docs/results/table3.md"
TEMPLATE = "table3.md"
STRATEGIES = ("fully_joint", "anti_curriculum", "curriculum")
TASKS = ("squad_dev", "sst", "srl", "woz.en", "schema")
CELLS = ("last", "best")  # a run's `cell`: its last validation round, or its best model over its validations
LABELS = {"fully_joint": "fully joint", "anti_curriculum": "SQuAD first", "curriculum": "the curriculum"}
NAMES = {"squad_dev": "squad_dev", "sst": "SST", "srl": "QA-SRL", "woz.en": "WOZ", "schema": "MWSC"}
ROWS = {"fully_joint": "fully_joint", "anti_curriculum": "anti_curriculum_squad", "curriculum": "curriculum"}
# The paper's Table 3 rows of these strategies on the five tasks (SQuAD for squad_dev).
PAPER = {ours: {t: PAPER_TABLE3[row][0][DECANLP.index("squad" if t == "squad_dev" else t)] for t in TASKS}
         for ours, row in ROWS.items()}
FINDINGS = (("anti_curriculum", "sum", "SQuAD first beats fully joint (sum of the 5)"),
            ("anti_curriculum", "squad_dev", "SQuAD first raises SQuAD"),
            ("curriculum", "sum", "the curriculum (easy tasks first) lowers the sum"),
            ("curriculum", "squad_dev", "the curriculum lowers SQuAD"))


def scores(record: dict, strategy: str, task: str) -> list[float]:
    """Each seed's cell of `task` ("sum": of the five tasks) for `strategy` (what a cell is: `cell_kind`)."""
    runs = [r for r in record["runs"] if r["strategy"] == strategy]
    if task == "sum":
        return [sum(r["scores"][t] for t in TASKS) for r in runs]
    return [r["scores"][task] for r in runs]


def cell_kind(record: dict) -> str:
    """What every run's cell is, by the run's `cell`: "last" (its last validation round) or "best" (its best model
    over its validations, chosen on the rows that score it); a RecordError where a run lacks it or runs mix the two."""
    kinds: dict = {}
    for r in record["runs"]:
        kinds.setdefault(r.get("cell"), []).append(r.get("name") or f"seed {r.get('seed')}")
    unknown = [name for kind, names in kinds.items() if kind not in CELLS for name in names]
    if unknown:
        raise records.RecordError(f"table3.json: no `cell` ({' or '.join(CELLS)}) in run {', '.join(unknown)}")
    if len(kinds) > 1:
        raise records.RecordError(
            "table3.json would mix last-round cells (" + ", ".join(kinds["last"]) + ") with best-of-validation cells ("
            + ", ".join(kinds["best"]) + "): a table holds one kind; bring back every run of the grid, or remove the "
            "older runs from the record first")
    return next(iter(kinds))


def cell_text(record: dict) -> dict[str, str]:
    """The page's cell rule and the results table's heading, from `cell_kind`; a best model's count of
    validations from the runs' curves."""
    if cell_kind(record) == "last":
        return {"cell_rule": f"a cell is each run's last validation round (iteration {record['iterations']:,}), as the "
                             "paper reports the end of training",
                "cell_head": "Last validation round, mean ± sd over the seeds."}
    counts = sorted({len(r["curve"]) for r in record["runs"]})
    n = str(counts[0]) if len(counts) == 1 else f"{counts[0]}-{counts[-1]}"
    return {"cell_rule": f"a cell is each run's best model of its {n} validations, chosen by the sum of the five "
                         "headlines on the same validation rows that score it: a best-of-validation figure, one run "
                         "per seed, not the end of training the paper reports",
            "cell_head": f"Each run's best model of its {n} validations (by the sum of the five headlines, on the rows "
                         "that score it), mean ± sd over the seeds."}


def validation_text(record: dict, floors: dict) -> str:
    """How often and on which rows the runs validated: the record's `val_every`, the floors' rows."""
    every = record.get("val_every")
    when = f"every {every:,} iterations" if every else "at intervals not recorded"
    return (f"Validation {when} on the first {floors['sst']['examples']} examples of each validation split "
            f"(MWSC's {floors['schema']['examples']}), greedy")


def rising(record: dict, strategy: str, task: str) -> bool:
    """Whether a run of `strategy` still rises on `task` (any of the five for "sum"), by the record."""
    tasks = TASKS if task == "sum" else (task,)
    return any(r["still_rising"].get(t) for r in record["runs"] if r["strategy"] == strategy for t in tasks)


def floor(floors: dict, task: str) -> float | None:
    """The floor of `task` on the rows Table 3 validated on; for "sum", the sum of the five tasks' floors (each
    task's strongest trivial answerer, which together score that sum)."""
    if task == "sum":
        found = [floor_of(floors.get(t)) for t in TASKS]
        return None if None in found else sum(found)
    return floor_of(floors.get(task))


def results_table(record: dict, floors: dict) -> str:
    """Mean ± sd over seeds per strategy and task, the paper's row beside, and the floor row."""
    rows = []
    for s in STRATEGIES:
        seeds = ", ".join(str(r["seed"]) for r in record["runs"] if r["strategy"] == s)
        paper = PAPER[s]
        rows.append([s, seeds, *(mean_sd(scores(record, s, t)) for t in (*TASKS, "sum")),
                     " / ".join(num(paper[t]) for t in TASKS) + f" = {num(sum(paper.values()))}"])
    rows.append(["floor (strongest trivial answerer)", "", *(num(floor(floors, t)) for t in (*TASKS, "sum")),
                 "; ".join(f"{t}: {floors[t]['answerer']}" for t in TASKS if t in floors)])
    return table(["strategy", "seeds", *TASKS, "sum of 5", "paper (same tasks; SQuAD for squad_dev)"], rows,
                 "ll" + "r" * (len(TASKS) + 1) + "l")


def step_of(record: dict, strategy: str, task: str, paper: float, floors: dict) -> Step:
    """One finding for eval/steps.py: fully joint -> `strategy` on `task`, per example where every run of both
    sides kept its record (docs/results/records/examples/table3/; never for the sum of five tasks, whose
    two-level interval is not computed), else over the seeds."""
    sides = ("fully_joint", strategy)
    a = b = clusters = None
    if task != "sum":
        kept = [[examples.load("table3", r.get("name")) for r in record["runs"] if r["strategy"] == s] for s in sides]
        (a, clusters), (b, _) = (examples.side(found, task) for found in kept)
        if a is None or b is None or not examples.same_examples(*kept, task):
            a = b = clusters = None
    return Step(f"{strategy} {task}", paper, a, b, tuple(scores(record, s, task) for s in sides), clusters,
                floor(floors, task), [rising(record, s, task) for s in sides])


def judged(record: dict, floors: dict) -> list[tuple[tuple[str, str, str], Judged]]:
    """Each finding judged together (eval/steps.py: Holm over the four, each one's MDE)."""
    found = []
    for s, task, text in FINDINGS:
        base, other = PAPER["fully_joint"], PAPER[s]
        paper = sum(other.values()) - sum(base.values()) if task == "sum" else other[task] - base[task]
        found.append(step_of(record, s, task, paper, floors))
    return list(zip(FINDINGS, judge_steps(found)))


def findings(record: dict, floors: dict, found: list | None = None) -> tuple[str, Counter]:
    """The verdict table (`judged`, or `found` where already judged): the paper's change, the change of the means
    here [95% interval], MDE, Holm's p, the verdict."""
    rows, tally = [], Counter()
    for (s, task, text), j in (found or judged(record, floors)):
        tally[j.verdict] += 1
        unit = None if task == "sum" else cluster_unit(task)
        rows.append([text, num(j.step.paper, sign=True), interval(j.change.interval), mde_cell(j), p_cell(j),
                     verdict_cell(j, unit)])
    return table(["the paper's finding", "paper", "here [95% interval]", "MDE (80% power)", "Holm p",
                  "verdict (eval/verdict.py)"], rows, "lrrrrl"), tally


def runs_table(record: dict) -> str:
    """Each run: its MLflow run, phases, minutes, load before / after and its five scores ("-": not kept; the
    grid's runs, experiments/single_task.py, have no MLflow run and keep the load at their end only)."""
    rows = [[r["name"], r["mlflow_run"] or "-", r["phases"], num(r["minutes"]),
             " / ".join(num(v) for v in r["load"]) if r["load"] else "-",
             " / ".join(num(r["scores"][t]) for t in TASKS)] for r in record["runs"]]
    return table(["run", "MLflow run", "phases (MLflow tags)", "minutes", "load average before / after",
                  " / ".join(TASKS)], rows, "lllrll")


def relation(values: list[float], floor_value: float) -> str:
    """Where all of `values` lie against `floor_value`."""
    if max(values) < floor_value:
        return "below"
    if max(values) <= floor_value:
        return "at or below"
    if min(values) > floor_value:
        return "above"
    return "at or above" if min(values) >= floor_value else "on both sides of"


def rising_in(record: dict, task: str) -> str:
    """In how many runs `task` was still rising by the record: 'every run', 'k of the n runs' or 'no run'."""
    found = [r["still_rising"].get(task) for r in record["runs"]]
    up, unknown = found.count(True), found.count(None)
    said = "every run" if up == len(found) else f"{up} of the {len(found)} runs" if up else "no run"
    return said + (f" (unknown in {unknown}: no curve kept, nor a reading of the plot)" if unknown else "")


def rising_tasks(record: dict) -> list[str]:
    """The tasks still rising in some run, by the record."""
    return [t for t in TASKS if any(r["still_rising"].get(t) for r in record["runs"])]


def rising_here(record: dict, names: dict | None = None) -> str:
    """The tasks still rising in some run, each with in how many (`names`: what to call a task)."""
    found = [f"{(names or {}).get(t, t)} in {rising_in(record, t)}" for t in rising_tasks(record)]
    return "; ".join(found) or "no task in any run"


def answerer(found: dict) -> str:
    """A floor's answerer, and what it amounts to where it scores what a random candidate does."""
    same = found.get("floors", {}).get("random candidate") == found["floor"] and found["answerer"] != "random candidate"
    return found["answerer"] + (", which scores what picking one of the two candidates at random does" if same else "")


def at_floor_tasks(record: dict, floors: dict, explain: bool = True) -> list[str]:
    """Each task with a run at or below its floor: 'QA-SRL in every run (24.2-27.0 against 28.1, first
    sentence)' (`explain`: with what a candidate answerer amounts to)."""
    out = []
    for t in (t for t in TASKS if t in floors):
        found = [x for s in STRATEGIES for x in scores(record, s, t)]
        low = sum(x <= floors[t]["floor"] for x in found)
        if low:
            runs = "every run" if low == len(found) else f"{low} of the {len(found)} runs"
            out.append(f"{NAMES[t]} in {runs} ({num(min(found))}-{num(max(found))} against {num(floors[t]['floor'])}, "
                       f"{answerer(floors[t]) if explain else floors[t]['answerer']})")
    return out


def fair_budget(record: dict, floors: dict) -> str:
    """What a fair Table 3 needs: the findings' own tasks above their floors, the rising tasks levelled off."""
    own = [t for t in dict.fromkeys(task for _, task, _ in FINDINGS) if t in floors
           and any(x <= floors[t]["floor"] for s in STRATEGIES for x in scores(record, s, t))]
    up = [NAMES[t] for t in rising_tasks(record)]
    needs = [f"{NAMES[t]} clears its floor" for t in own]
    needs += [f"{words(up)} {'has' if len(up) == 1 else 'have'} levelled off"] if up else []
    return words(needs) or "no task still rises and the findings' tasks clear their floors, as here"


def squad_bullet(record: dict, floors: dict) -> str:
    """squad_dev's range against its floor; while it is at or below the floor, why its findings are not tested."""
    squad = [x for s in STRATEGIES for x in scores(record, s, "squad_dev")]
    found = floors["squad_dev"]
    where = relation(squad, found["floor"])
    said = (f"squad_dev ends at {num(min(squad))}-{num(max(squad))} nF1 over the runs, whatever the strategy, {where} "
            f"the {num(found['floor'])} of answering with the context's {found['answerer']}")
    if where in ("below", "at or below"):
        return (f"**The SQuAD-derived task never gets going at this budget.** {said}, so the paper's SQuAD findings "
                "(differences between models that learned SQuAD) are not what these runs measure.")
    return f"**squad_dev.** {said}."


def reaching_sides(record: dict, found: list, sum_floor: float) -> list[str]:
    """The strategies whose sums all lie above `sum_floor` while their interval over the seeds reaches it."""
    out = {}
    for (strategy, task, _), j in found:
        for s, side in zip(("fully_joint", strategy), j.sides):
            values = scores(record, s, task)
            if task == "sum" and min(values) > sum_floor and at_floor(side.interval, sum_floor):
                half = side.interval.high - side.interval.value
                out[s] = f"{LABELS[s]}'s interval reaches it only because its {len(values)} seeds give it ±{num(half)}"
    return list(out.values())


def sums_text(record: dict, floors: dict, found: list) -> str:
    """The sums against the sum of the five floors, and which sides reach it only through a wide interval."""
    sums = [x for s in STRATEGIES for x in scores(record, s, "sum")]
    sum_floor = floor(floors, "sum")
    where = relation(sums, sum_floor)
    said = f"the sums ({num(min(sums))}-{num(max(sums))}) lie "
    if where == "above":
        said += f"{num(min(sums) - sum_floor)}-{num(max(sums) - sum_floor)} points above"
    else:
        said += where
    said += f" the {num(sum_floor)} that the five floors add up to"
    reach = reaching_sides(record, found, sum_floor)
    return said + (f"; {words(reach)}" if reach else "")


def sums_bullet(record: dict, floors: dict, found: list) -> str:
    """Why the sums are (or are not) a test: WOZ's climb, where SQuAD first's gain comes from, every task at or
    below its floor, and the sums against the floors' sum."""
    woz = [r["scores"]["woz.en"] for r in record["runs"]]
    gain = {t: mean(scores(record, "anti_curriculum", t)) - mean(scores(record, "fully_joint", t))
            for t in ("sum", "schema")}
    low = at_floor_tasks(record, floors)
    verdicts = {j.verdict for (_, task, _), j in found if task == "sum"}
    head = "**The sums are not a test either.**" if verdicts == {NOT_TESTED} else "**The sums.**"
    climb = rising_in(record, "woz.en")
    return (f"{head} WOZ's cells lie at {num(min(woz))}-{num(max(woz))} joint goal EM and WOZ was still climbing in "
            f"{climb}" + (", so where on that climb a run's cell was read decides its sum" if climb != "no run" else "")
            + f". SQuAD first's {num(gain['sum'], sign=True)} on the sum is MWSC's {num(gain['schema'], sign=True)} "
            f"and {num(gain['sum'] - gain['schema'], sign=True)} from the other four tasks together. "
            + (f"At or below their floors: {words(low)}. " if low else "No task is at or below its floor in any run. ")
            + f"On WOZ {floors_text(floors['woz.en'], 'joint goal EM')} (the tracker that never "
            f"changes its state answers \"none\" at every turn); {sums_text(record, floors, found)}.")


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/table3.md."""
    record = record or records.load("table3")
    floors = floors if floors is not None else records.floors("table3")
    found = judged(record, floors)
    verdicts, tally = findings(record, floors, found)
    return {"plan_table": planned.section("table3"), "plan_min_seeds": str(records.load("plan")["min_seeds"]),
            "plan_assumed": records.load("plan")["assumed"], "date": record["date"],
            "machine": "; ".join(records.describe_machine(record["machines"][k])
                                 for k in sorted({r["machine"] for r in record["runs"]})),
            "source": record["source"], "iterations": f"{record['iterations']:,}",
            "phase_iterations": f"{record['phase_iterations']:,}", "results_table": results_table(record, floors),
            "verdict_table": verdicts, "tally": ", ".join(f"{n} {v}" for v, n in sorted(tally.items())),
            "runs_table": runs_table(record), "rising_here": rising_here(record),
            "fair_budget": fair_budget(record, floors),
            "squad_bullet": squad_bullet(record, floors), "sums_bullet": sums_bullet(record, floors, found),
            "val_rows": str(floors["sst"]["examples"]), "mwsc_rows": str(floors["schema"]["examples"]),
            "validation": validation_text(record, floors), **cell_text(record)}


def index_values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The figures of README.md's index line (experiments/results/readme.py)."""
    record = record or records.load("table3")
    floors = floors if floors is not None else records.floors("table3")
    squad = [x for s in STRATEGIES for x in scores(record, s, "squad_dev")]
    tally = findings(record, floors)[1]
    return {"tally": ", ".join(f"{n} {v}" for v, n in sorted(tally.items())), "squad_low": num(min(squad)),
            "squad_high": num(max(squad)), "squad_where": relation(squad, floors["squad_dev"]["floor"]),
            "squad_floor": num(floors["squad_dev"]["floor"]), "squad_answerer": floors["squad_dev"]["answerer"],
            "woz_rising": rising_in(record, "woz.en"), "rising": rising_here(record, NAMES),
            "at_floor": words(at_floor_tasks(record, floors, explain=False)) or "none"}
