"""docs/results/table3.md: Table 3 in miniature (fully joint, SQuAD-first anti-curriculum, curriculum) from
docs/results/records/table3.json, with eval/verdict.py's verdict on each of the paper's findings."""
from __future__ import annotations

from collections import Counter
from statistics import mean

from deca.registry import DECANLP
from eval.clustered import cluster_unit
from eval.compare import PAPER_TABLE3
from eval.steps import Step, judge_steps
from experiments.results import examples, planned, records
from experiments.results.render import floor_of, interval, mde_cell, mean_sd, num, p_cell, table, verdict_cell

PAGE = "docs/results/table3.md"
TEMPLATE = "table3.md"
STRATEGIES = ("fully_joint", "anti_curriculum", "curriculum")
TASKS = ("squad_dev", "sst", "srl", "woz.en", "schema")
ROWS = {"fully_joint": "fully_joint", "anti_curriculum": "anti_curriculum_squad", "curriculum": "curriculum"}
# The paper's Table 3 rows of these strategies on the five tasks (SQuAD for squad_dev).
PAPER = {ours: {t: PAPER_TABLE3[row][0][DECANLP.index("squad" if t == "squad_dev" else t)] for t in TASKS}
         for ours, row in ROWS.items()}
FINDINGS = (("anti_curriculum", "sum", "SQuAD first beats fully joint (sum of the 5)"),
            ("anti_curriculum", "squad_dev", "SQuAD first raises SQuAD"),
            ("curriculum", "sum", "the curriculum (easy tasks first) lowers the sum"),
            ("curriculum", "squad_dev", "the curriculum lowers SQuAD"))


def scores(record: dict, strategy: str, task: str) -> list[float]:
    """Each seed's last-round headline of `task` ("sum": of the five tasks) for `strategy`."""
    runs = [r for r in record["runs"] if r["strategy"] == strategy]
    if task == "sum":
        return [sum(r["scores"][t] for t in TASKS) for r in runs]
    return [r["scores"][task] for r in runs]


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


def findings(record: dict, floors: dict) -> tuple[str, Counter]:
    """Each finding, judged together (eval/steps.py: Holm over the four, each one's MDE): the paper's change,
    the change of the means here [95% interval], MDE, Holm's p, the verdict."""
    found = []
    for s, task, text in FINDINGS:
        base, other = PAPER["fully_joint"], PAPER[s]
        paper = sum(other.values()) - sum(base.values()) if task == "sum" else other[task] - base[task]
        found.append(step_of(record, s, task, paper, floors))
    rows, tally = [], Counter()
    for (s, task, text), j in zip(FINDINGS, judge_steps(found)):
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


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/table3.md."""
    record = record or records.load("table3")
    floors = floors if floors is not None else records.floors("table3")
    verdicts, tally = findings(record, floors)
    squad = scores(record, "fully_joint", "squad_dev") + scores(record, "anti_curriculum", "squad_dev") \
        + scores(record, "curriculum", "squad_dev")
    woz = [r["scores"]["woz.en"] for r in record["runs"]]
    gain = {t: mean(scores(record, "anti_curriculum", t)) - mean(scores(record, "fully_joint", t))
            for t in ("sum", "schema")}
    return {"plan_table": planned.section("table3"), "plan_min_seeds": str(records.load("plan")["min_seeds"]),
            "plan_assumed": records.load("plan")["assumed"], "date": record["date"], "machine": "; ".join(records.describe_machine(record["machines"][k])
                                                        for k in sorted({r["machine"] for r in record["runs"]})),
            "source": record["source"], "iterations": f"{record['iterations']:,}",
            "phase_iterations": f"{record['phase_iterations']:,}", "results_table": results_table(record, floors),
            "verdict_table": verdicts, "tally": ", ".join(f"{n} {v}" for v, n in sorted(tally.items())),
            "runs_table": runs_table(record), "squad_low": num(min(squad)), "squad_high": num(max(squad)),
            "woz_low": num(min(woz)), "woz_high": num(max(woz)), "sum_gain": num(gain["sum"], sign=True),
            "mwsc_gain": num(gain["schema"], sign=True), "mwsc_floor": num(floors["schema"]["floor"]),
            "mwsc_answerer": floors["schema"]["answerer"], "squad_floor": num(floors["squad_dev"]["floor"]),
            "squad_answerer": floors["squad_dev"]["answerer"], "woz_floor": num(floors["woz.en"]["floor"]),
            "sum_floor": num(floor(floors, "sum")), "val_rows": str(floors["sst"]["examples"])}
