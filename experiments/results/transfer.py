"""docs/results/transfer.md: Figure 4 in miniature (German→English from a four-task model against random
initialization) from docs/results/transfer.json, with eval/verdict.py's verdict on "pretrained is better" and
the floors of the same validation pairs (records/floors.json, set "transfer")."""
from __future__ import annotations

from statistics import mean

from experiments.results import glove, records
from experiments.results.render import floor_cell, floor_of, judge, num, table

PAGE = "docs/results/transfer.md"
TEMPLATE = "transfer.md"
SHOWN = (250, 500, 1000, 1500, 2000, 2500)
TASK = "iwslt_de_en"  # the custom task experiments/transfer_iwslt.py declares
LAST = 750  # iterations at the end over which the BLEU is averaged
LOSS_TAIL = 10  # logged training losses at the end that are averaged (one logged step is noise)
PAPER = +1.0  # the paper's Figure 4: the pretrained model learns the new task better (direction only)


def at(points: list, iteration: int) -> float:
    """The value at `iteration` of a [(iteration, ..., value)] curve."""
    return next(p[-1] for p in points if p[0] == iteration)


def curve_table(runs: dict, floors: dict) -> str:
    """BLEU and nF1 of both runs at the shown iterations, and the floor row (strongest trivial answerer)."""
    rows = [[i, num(at(runs["pretrained"]["curve"], i), 2), num(at(runs["pretrained"]["nf1"], i)),
             num(at(runs["random"]["curve"], i), 2), num(at(runs["random"]["nf1"], i))] for i in SHOWN]
    bleu, nf1 = floor_cell(floors.get(TASK), 2), floor_cell(floors.get(f"{TASK} nf1"))
    rows.append(["floor", bleu, nf1, bleu, nf1])
    return table(["iteration", "pretrained BLEU", "pretrained nF1", "random BLEU", "random nF1"], rows, "rrrrr")


def tail_bleu(run: dict) -> float:
    """Mean BLEU over the validations of the last LAST iterations."""
    end = max(p[0] for p in run["curve"])
    return mean(p[-1] for p in run["curve"] if p[0] > end - LAST)


def tail_loss(run: dict) -> float:
    """Mean training loss over the last LOSS_TAIL logged steps."""
    return mean(v for _, v in run["loss"][-LOSS_TAIL:])


def ends(runs: dict, end: int, floor: float) -> dict[str, str]:
    """Each run's BLEU at `end` and whether it is under, at or above the floor."""
    out = {}
    for key, name in (("pre", "pretrained"), ("rnd", "random")):
        value = at(runs[name]["curve"], end)
        out[f"{key}_end"] = num(value, 2)
        out[f"{key}_where"] = "under" if value < floor else "at" if value == floor else "above"
    return out


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/transfer.md."""
    record = record or records.load("transfer")
    floors = floors if floors is not None else records.floors("transfer")
    runs = record["runs"]
    pre, rnd = tail_bleu(runs["pretrained"]), tail_bleu(runs["random"])
    end = max(p[0] for p in runs["pretrained"]["curve"])
    floor = floor_of(floors.get(TASK))
    _, said = judge([at(runs["random"]["curve"], end)], [at(runs["pretrained"]["curve"], end)], PAPER,
                    floor=floor, digits=2)
    ahead = [i for k, i in enumerate(SHOWN)
             if all(at(runs["pretrained"]["curve"], j) > at(runs["random"]["curve"], j) for j in SHOWN[k:])]
    return {"train_pairs": f"{record['train_pairs']:,}", "validation": str(record["validation_examples"]),
            "table": curve_table(runs, floors), "floor_bleu": num(floor_of(floors[TASK]), 2),
            "floor_nf1": num(floor_of(floors[f"{TASK} nf1"])), "floor_answerer": floors[TASK]["answerer"],
            "copy_bleu": num(floors[TASK]["floors"]["copy the source"], 2),
            **ends(runs, end, floor_of(floors[TASK])), "last": str(LAST), "pre_tail": num(pre, 2), "rnd_tail": num(rnd, 2),
            "pre_over_floor": num(pre - floor, 2, sign=True), "rnd_over_floor": num(rnd - floor, 2, sign=True),
            "nf1_gap": num(at(runs["pretrained"]["nf1"], end) - at(runs["random"]["nf1"], end),
                                                       sign=True),
            "loss_tail": str(LOSS_TAIL), "loss_pre": num(tail_loss(runs["pretrained"]), 2),
            "loss_rnd": num(tail_loss(runs["random"]), 2), "date": record["date"], "commit": record["commit"],
            "verdict": said, "direction": "is seen here" if pre > rnd else "is not seen here", "ahead_from": f"{min(ahead):,}" if ahead else "-", "end": f"{end:,}",
            "max_bleu": num(max(p[-1] for r in runs.values() for p in r["curve"]), 2),
            "run_pre": runs["pretrained"]["run"], "run_rnd": runs["random"]["run"],
            "machine": glove.machine_text(record), "workers": glove.workers_text(runs)}
