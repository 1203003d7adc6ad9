"""docs/results/glove_single_vs_joint.md: the GloVe recipe, single-task against fully joint (issue 10), from
docs/results/issue10.json (the runs' curves and their date and commit) and records/floors.json."""
from __future__ import annotations

import statistics

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
    sst, srl = single(record, "sst"), single(record, "srl")
    majority = floors["sst"]["floors"]["constant answer"]
    out = {"results_table": issue10.results_table(record, floors), "joint_minutes": num(joint["minutes_budget"], 0),
           "joint_iterations": f"{joint['last_iteration']:,}", "own_batches": f"{rows['sst']['joint_own_batches']:.0f}",
           "sst_majority": num(majority), "sst_leaves": str(leaves_plateau(sst, majority)),
           "sst_joint_leaves": str(leaves_plateau([(i // 4, v) for i, _, v in joint["curves"]["sst"]], majority)),
           "sst_after_best": after_best(sst), "sst_last": num(sst[-1][-1]), "sst_last_iteration": f"{sst[-1][0]:,}",
           "srl_first_high": num(max(v for i, _, v in srl if i <= 2400)), "srl_last": num(srl[-1][-1]),
           "srl_last_iteration": f"{srl[-1][0]:,}", "mwsc_floor": num(floors["schema"]["floor"]),
           "mwsc_joint": num(rows["schema"]["joint_last"]), "date": record["date"], "commit": record["commit"]}
    floor = floors["schema"]["floor"]
    for key, value in (("mwsc_single_where", rows["schema"]["single_best"]), ("mwsc_joint_where", rows["schema"]["joint_last"])):
        out[key] = "at or below" if value <= floor else "above"
    for task in issue10.LABELS:
        out[f"{task.replace('.', '_')}_best"] = num(rows[task]["single_best"])
    return out
