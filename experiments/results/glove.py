"""docs/results/glove_single_vs_joint.md: the GloVe recipe, single-task against fully joint (issue 10), from
docs/results/issue10.json (the runs' curves and their date and commit) and records/floors.json."""
from __future__ import annotations

import statistics
from collections import Counter

from experiments.results import issue10, records
from experiments.results.render import num

PAGE = "docs/results/glove_single_vs_joint.md"
TEMPLATE = "glove_single_vs_joint.md"


def single(record: dict, task: str) -> list[tuple[int, float, float]]:
    """The single-task run's curve of `task`: (iteration, minutes, headline)."""
    return [tuple(p) for p in record["single"][task]["curve"]]


def leaves_plateau(curve: list, plateau: float, margin: float = 1.0) -> int | None:
    """The first iteration whose headline is above `plateau` + `margin` (None: never)."""
    return next((p[0] for p in curve if p[-1] > plateau + margin), None)


def plateau(curve: list, level: float, unit: str = "iteration") -> str:
    """How long the curve lies at or below `level` (at the one decimal shown): 'through iteration 400, first above
    it at iteration 500' (the last validation there, the first one above)."""
    above = leaves_plateau(curve, level, 0.05)
    on = [p[0] for p in curve if above is None or p[0] < above]
    if not on:
        return f"at no validation (above it from the first, {unit} {above:,})"
    if above is None:
        return f"to its end ({unit} {on[-1]:,})"
    return f"through {unit} {on[-1]:,}, first above it at {unit} {above:,}"


def plateau_level(curve: list, floors: dict) -> str:
    """The level of a curve's validations at or below the majority answer's, and the trivial answerer of the task
    (floors.json) nearest its last one: '49.1-49.2, about the first candidate answerer's 49.1, the minority label'."""
    majority = floors["floors"]["constant answer"]
    above = leaves_plateau(curve, majority, 0.05)
    on = [p[-1] for p in curve if above is None or p[0] < above]
    if not on:
        return "none"
    name, level = min(((k, v) for k, v in floors["floors"].items() if v > 0), key=lambda kv: abs(kv[1] - on[-1]))
    what = "the majority label" if name == "constant answer" else "the minority label" if level < majority else name
    return f"{num(min(on))}-{num(max(on))}, about the {name} answerer's {num(level)}, {what}"


def resume_point(curve: list) -> list | None:
    """Where a run stopped on its time budget and was continued: the first validation before the last that is off
    the curve's regular spacing (a run validates every val_every iterations and once more where it stops)."""
    if len(curve) < 3:
        return None
    every = Counter(b[0] - a[0] for a, b in zip(curve, curve[1:])).most_common(1)[0][0]
    return next((p for p in curve[:-1] if p[0] % every), None)


def srl_text(record: dict) -> str:
    """QA-SRL's single-task run: its best within the first budget, where that stopped, and its end."""
    curve, minutes = single(record, "srl"), record["single"]["srl"]["minutes"]
    end = f"ending at {num(curve[-1][-1])} at iteration {curve[-1][0]:,}"
    stop = resume_point(curve)
    if stop is None:
        return f"QA-SRL ran in one stretch of {num(minutes, 0)} minutes, {end}"
    best = max((p for p in curve if p[0] <= stop[0]), key=lambda p: p[-1])
    return (f"QA-SRL reached {num(best[-1])} (iteration {best[0]:,}) in its first {num(minutes, 0)}-minute budget, "
            f"which stopped at iteration {stop[0]:,} ({num(stop[1])} min), and was continued with "
            f"`deca train --resume <run>`, {end}")


def setting(run: dict, key: str):
    """A run's training setting `key` (num_workers, cpus_per_worker) from its overrides or its report's `train`;
    None where the record holds neither."""
    found = (run.get("overrides") or {}).get(f"train.{key}")
    return found if found is not None else (run.get("train") or {}).get(key)


def workers_text(runs: dict[str, dict]) -> str:
    """The Ray workers of the runs ({label: run}) as their records hold them: 'each run on 2 Ray workers × 1 CPU'."""
    counts = {setting(r, "num_workers") for r in runs.values()}
    if counts == {None}:
        return "Ray workers not recorded"
    if len(counts) > 1:
        return "Ray workers: " + ", ".join(f"{setting(r, 'num_workers') or 'not recorded'} in {k}"
                                           for k, r in runs.items())
    n = counts.pop()
    said = f"each run on {n} Ray worker{'s' if n != 1 else ''}"
    cpus = {k: setting(r, "cpus_per_worker") for k, r in runs.items()}
    known = {v for v in cpus.values() if v is not None}
    if len(known) == 1 and None not in cpus.values():
        return said + f" × {known.pop():g} CPU"
    if not known:
        return said + " (CPUs per worker not recorded)"
    return said + " (" + ", ".join(f"{v:g} CPU each in {k}" for k, v in cpus.items() if v is not None) + \
        "; CPUs per worker not recorded for the others)"


def machine_text(record: dict) -> str:
    """The machine as the record holds it (`machine`), else what was not recorded."""
    found = record.get("machine")
    if found:
        return records.describe_machine(found)
    return "a CPU machine whose model, core count and load were not recorded"


def after_best(curve: list) -> str:
    """What the curve does after its best: it overfits when it ends below the best by more than twice the
    standard deviation of its successive changes after the best (the scatter from one validation to the
    next); else it stays within that scatter."""
    best = max(range(len(curve)), key=lambda k: curve[k][-1])
    tail = [p[-1] for p in curve[best:]]
    drop = tail[0] - tail[-1]
    steps = [b - a for a, b in zip(tail, tail[1:])]
    scatter = statistics.stdev(steps) if len(steps) > 1 else 0.0
    if len(steps) > 1 and drop > 2 * scatter:
        return (f"then overfits after its best (it falls {num(drop)} points, against a scatter of {num(scatter)} "
                f"between successive validations)")
    return f"then stays near its best (within twice the {num(scatter)} scatter between successive validations)"


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/glove_single_vs_joint.md."""
    record = record or records.load("issue10")
    floors = floors if floors is not None else records.floors()
    rows, joint = record["rows"], record["joint"]
    sst = single(record, "sst")
    majority = floors["sst"]["floors"]["constant answer"]
    own = [(i // len(joint["curves"]), v) for i, _, v in joint["curves"]["sst"]]
    runs = {**{f"single-task {t}": record["single"][t] for t in record["single"]}, "the fully joint run": joint}
    out = {"results_table": issue10.results_table(record, floors), "joint_minutes": num(joint["minutes_budget"], 0),
           "joint_iterations": f"{joint['last_iteration']:,}", "own_batches": f"{rows['sst']['joint_own_batches']:.0f}",
           "sst_majority": num(majority), "sst_plateau": plateau(sst, majority),
           "sst_joint_plateau": plateau(own, majority, "own batch"),
           "sst_joint_level": plateau_level(own, floors["sst"]),
           "sst_after_best": after_best(sst), "sst_last": num(sst[-1][-1]), "sst_last_iteration": f"{sst[-1][0]:,}",
           "srl_text": srl_text(record), "mwsc_floor": num(floors["schema"]["floor"]),
           "mwsc_joint": num(rows["schema"]["joint_last"]), "date": record["date"], "commit": record["commit"],
           "machine": machine_text(record), "workers": workers_text(runs)}
    floor = floors["schema"]["floor"]
    for key, value in (("mwsc_single_where", rows["schema"]["single_best"]),
                       ("mwsc_joint_where", rows["schema"]["joint_last"])):
        out[key] = "at or below" if value <= floor else "above"
    for task in issue10.LABELS:
        out[f"{task.replace('.', '_')}_best"] = num(rows[task]["single_best"])
        out[f"{task.replace('.', '_')}_validations"] = str(len(record["single"][task]["curve"]))
    return out
