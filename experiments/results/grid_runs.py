"""The grid's (experiments/grid.sh) Table 3 and zero-shot runs into their records: the way back from a GPU
session's export to the pages, as experiments/results/runs.py is for Table 2's runs.

    python -m experiments.results.runs table3 <export>/table3-* --machine h100 --machine-file <export>/machine.json
    python -m experiments.results.runs zero_shot <export>/zero-shot-* <export>/table3-* --machine h100 \\
        --machine-file <export>/machine.json
    make results

A Table 3 run is an experiments/single_task.py folder of the five tasks (curve.json with every task's headline
at each point, its phases): its record run holds the scores of the best model (by the sum of the five
headlines, the one whose per-example record examples.json.gz is kept; `cell` "best"), each task's curve and
whether it still rises; a Table 3 record whose runs would mix such cells with older last-round ones is refused.
A zero-shot run is a folder whose best model answered the renamed SST questions (grid.sh's `renamed`:
zero_shot.json.gz per example and zero_shot_figures.json, `keep_renamed` below); its group in
docs/results/records/zero_shot.json (by the folder's task; five tasks: Table 3's group) is replaced by the
folders given, their figures written to the group's record file and their per-example records beside it.
"""
from __future__ import annotations

import json
import sys
import time
from collections import Counter
from pathlib import Path

from eval.verdict import still_rising
from experiments import zero_shot_report
from experiments.results import examples, records, table3, zero_shot

FIGURES = "zero_shot_figures.json"  # in a run folder: zero_shot_report's figures of each task
RENAMED = "zero_shot.json.gz"  # in a run folder: the per-example record of the renamed questions
TABLE3_GROUP = "Table 3 five-task models"
STRATEGY = {"fully_joint": "fully_joint", "custom": "anti_curriculum", "curriculum": "curriculum"}


def figures(metrics: Path, predictions: Path) -> dict:
    """{task: EM, first word right, one-word answers %, top answers} of `deca evaluate`'s output (the figures
    of experiments/zero_shot_report.py that need no decoding internals; no "second word from")."""
    doc = json.loads(metrics.read_text(encoding="utf-8"))
    out = {}
    for task, scored in doc["tasks"].items():
        rows = [json.loads(line) for line in (predictions / f"{task}.jsonl").read_text(encoding="utf-8").splitlines()
                if line.strip()]
        said = [r["prediction"] for r in rows]
        first = sum(p.split()[:1] == [r["answer"]] for p, r in zip(said, rows))
        out[task] = {"em": float(scored["em"]), "first word right": 100 * first / len(rows),
                     "stops": 100 * sum(len(p.split()) == 1 for p in said) / len(rows),
                     "top answers": [(zero_shot_report.show(a), n) for a, n in Counter(said).most_common(5)],
                     "answers going on": sum(len(p.split()) > 1 for p in said)}
    return out


def keep_renamed(run: Path) -> None:
    """<run>/renamed (`deca evaluate` of the best model on sst and the renamed SST tasks) kept as <run>/FIGURES,
    then <run>/RENAMED (per example; written last: grid.sh takes it for "asked")."""
    metrics, predictions = run / "renamed" / "metrics.json", run / "renamed" / "predictions"
    tmp = run / (FIGURES + ".tmp")
    tmp.write_text(json.dumps(figures(metrics, predictions), indent=1) + "\n", encoding="utf-8")
    tmp.replace(run / FIGURES)
    examples.write(run / RENAMED, examples.from_evaluation(run.name, metrics, predictions))


def overrides_of(run: dict) -> dict[str, str]:
    return dict(o.split("=", 1) for o in run.get("overrides", []))


def table3_run(folder: Path, base: dict) -> dict:
    """The Table 3 record run of one five-task single_task.py folder, from `base` (its run as Table 2's are made:
    experiments/results/runs.py's from_folder); a RecordError when it is not Table 3's."""
    run = json.loads((folder / "curve.json").read_text(encoding="utf-8"))
    if run["task"].split(",") != list(table3.TASKS):
        raise records.RecordError(f"{folder}: trained on {run['task']}, not Table 3's five tasks "
                                  f"({','.join(table3.TASKS)}); give Table 3's run folders (table3-*)")
    strategy = STRATEGY[overrides_of(run).get("train.strategy", "fully_joint")]
    points = run["curve"]
    curves = {t: [[p["iteration"], round(p["headlines"][t], 2)] for p in points if p["headlines"].get(t) is not None]
              for t in table3.TASKS}
    best = max(points, key=lambda p: sum(p["headlines"].get(t) or 0.0 for t in table3.TASKS))
    return {**{k: base[k] for k in ("name", "seed", "command", "commit", "params_digest", "machine", "minutes",
                                    "precision", "iterations", "tokens_per_s")},
            "strategy": strategy, "load": [None, round(run["load_end"][0], 2)] if run.get("load_end") else None,
            "curve": [[p["iteration"], round(sum(p["headlines"].get(t) or 0.0 for t in table3.TASKS), 2)]
                      for p in points],
            "curves": curves, "mlflow_run": None,
            "phases": "; ".join(v for _, v in sorted(run.get("phases", {}).items())) or strategy,
            "scores": {t: round(best["headlines"][t], 1) for t in table3.TASKS}, "best_iteration": best["iteration"],
            "cell": "best", "val_every": points[1]["iteration"] - points[0]["iteration"] if len(points) > 1 else None,
            "still_rising": {t: still_rising(c) for t, c in curves.items()},
            "phase_iterations": int(overrides_of(run).get("train.phase_iterations", 0)) or None}


def add_table3(folders: list[Path], bases: list[dict], machine: str, described: dict) -> dict:
    """docs/results/records/table3.json with the folders' runs (`bases`: runs.from_folder's) in place of those of
    the same name (every folder read and checked before anything is written), their per-example records beside
    it, the machine `described` under `machine`."""
    new = [table3_run(f, base) for f, base in zip(folders, bases)]
    kept = {f.name: examples.read(f / examples.FILE) for f in folders if (f / examples.FILE).is_file()}
    path = records.RECORDS / "table3.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    names = {r["name"] for r in new}
    record["runs"] = [r for r in record["runs"] if r["name"] not in names] + new
    table3.cell_kind(record)  # a record mixing the grid's best models with older last-round cells is refused
    record["machines"][machine] = described
    budgets = {(r.get("iterations"), r.get("phase_iterations")) for r in record["runs"]}
    if len(budgets) == 1:  # every run of the record now from the grid, at one budget: the page says it
        record["iterations"], record["phase_iterations"] = budgets.pop()
        every = {r.get("val_every") for r in record["runs"]}
        record["val_every"] = every.pop() if len(every) == 1 else None
        record["val_every_source"] = "the runs' curves (iterations between validations)"
        record["date"] = time.strftime("%Y-%m-%d", time.gmtime())  # the day the runs came back
        record["what"] = ("Table 3 in miniature (issue 45 grid): the best model of each run (by the sum of the five "
                          "headlines) and its per-example record")
        record["source"] = (f"experiments/grid.sh on {machine}, converted by `python -m experiments.results.runs "
                            "table3` from the runs' curve.json and examples.json.gz")
    for name, found in kept.items():
        examples.write(examples.DIR / "table3" / f"{name}.json.gz", found)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def group_of(record: dict, run: dict, folder: Path) -> dict:
    """The zero-shot group a run belongs to: Table 3's for five tasks, else the one whose command trained its task."""
    five = run["task"] == ",".join(table3.TASKS)
    for g in record["groups"]:
        if (g["name"] == TABLE3_GROUP) if five else (f"--task {run['task']} " in g["command"]):
            return g
    raise records.RecordError(f"{folder}: no zero-shot group in docs/results/records/zero_shot.json trains "
                              f"{run['task']}; add the group there first")


def label(run: dict) -> str:
    strategy = overrides_of(run).get("train.strategy")
    return (f"{STRATEGY[strategy].replace('_', ' ')}, seed {run['seed']}" if strategy
            else f"{run['task'].upper().replace(',', ' + ').replace('SCHEMA', 'MWSC')}, seed {run['seed']}")


def add_zero_shot(folders: list[Path], bases: list[dict], machine: str, described: dict) -> dict:
    """docs/results/records/zero_shot.json with each group that the folders belong to made of those folders (its
    record file of figures rewritten, the per-example records beside it); a folder without the renamed answers
    is refused before anything is written."""

    lacking = [str(f) for f in folders if not (f / FIGURES).is_file() or not (f / RENAMED).is_file()]
    if lacking:
        raise records.RecordError(f"no {FIGURES} or {RENAMED} in {', '.join(lacking)}: the renamed questions were "
                                  "not asked (rerun experiments/grid.sh: it asks them of every finished model)")
    path = records.RECORDS / "zero_shot.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    kept = {f: (examples.read(f / RENAMED), json.loads((f / FIGURES).read_text(encoding="utf-8"))) for f in folders}
    grouped: dict[str, list] = {}  # every folder read and placed before anything is written
    for f, base in zip(folders, bases):
        run = json.loads((f / "curve.json").read_text(encoding="utf-8"))
        grouped.setdefault(group_of(record, run, f)["name"], []).append((f, run, base))
    for group in record["groups"]:
        found = grouped.get(group["name"])
        if not found:
            continue
        group["models"] = [[f.name, label(run)] for f, run, _ in found]
        group["still_rising"] = {f.name: still_rising([(p["iteration"], p["headline"]) for p in run["curve"]],
                                                      run["iterations"]) for f, run, _ in found}
        _, run, base = found[0]
        group["command"] = (  # Table 3's without --task: experiments/plan.py plans no runs of its own for it
            "experiments/grid.sh: Table 3's five-task runs (docs/results/records/table3.json)"
            if group["name"] == TABLE3_GROUP else
            "experiments/grid.sh (" + base["command"].strip().replace(f"train.seed={run['seed']}", "train.seed=$s") + ")")
        group["machine"] = machine
        figures_path = records.RESULTS / f"{group['record']}.json"
        figures_path.write_text(json.dumps({f.name: kept[f][1] for f, _, _ in found}, indent=1), encoding="utf-8")
        for f, _, _ in found:
            examples.write(examples.DIR / "zero_shot" / group["record"] / f"{f.name}.json.gz", kept[f][0])
    record["machines"][machine] = described
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    records.load.cache_clear()
    return record


if __name__ == "__main__":  # grid.sh: python -m experiments.results.grid_runs keep-renamed <run folder>
    if sys.argv[1:2] != ["keep-renamed"] or len(sys.argv) != 3:
        sys.exit("usage: python -m experiments.results.grid_runs keep-renamed <run folder>")
    keep_renamed(Path(sys.argv[2]))
