"""docs/results/transfer.md: Figure 4 in miniature (German→English from a four-task model against random
initialization) from docs/results/transfer.json, with eval/verdict.py's verdict on "pretrained is better"."""
from __future__ import annotations

from statistics import mean

from experiments.results import records
from experiments.results.render import judge, num, table

PAGE = "docs/results/transfer.md"
TEMPLATE = "transfer.md"
SHOWN = (250, 500, 1000, 1500, 2000, 2500)
LAST = 750  # iterations at the end over which the BLEU is averaged
PAPER = +1.0  # the paper's Figure 4: the pretrained model learns the new task better (direction only)


def at(points: list, iteration: int) -> float:
    """The value at `iteration` of a [(iteration, ..., value)] curve."""
    return next(p[-1] for p in points if p[0] == iteration)


def curve_table(runs: dict) -> str:
    """BLEU and nF1 of both runs at the shown iterations."""
    rows = [[i, num(at(runs["pretrained"]["curve"], i), 2), num(at(runs["pretrained"]["nf1"], i)),
             num(at(runs["random"]["curve"], i), 2), num(at(runs["random"]["nf1"], i))] for i in SHOWN]
    return table(["iteration", "pretrained BLEU", "pretrained nF1", "random BLEU", "random nF1"], rows, "rrrrr")


def tail_bleu(run: dict) -> float:
    """Mean BLEU over the validations of the last LAST iterations."""
    end = max(p[0] for p in run["curve"])
    return mean(p[-1] for p in run["curve"] if p[0] > end - LAST)


def values(record: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/transfer.md."""
    record = record or records.load("transfer")
    runs = record["runs"]
    pre, rnd = tail_bleu(runs["pretrained"]), tail_bleu(runs["random"])
    end = max(p[0] for p in runs["pretrained"]["curve"])
    _, said = judge([at(runs["random"]["curve"], end)], [at(runs["pretrained"]["curve"], end)], PAPER)
    ahead = [i for k, i in enumerate(SHOWN)
             if all(at(runs["pretrained"]["curve"], j) > at(runs["random"]["curve"], j) for j in SHOWN[k:])]
    return {"train_pairs": f"{record['train_pairs']:,}", "validation": str(record["validation_examples"]),
            "table": curve_table(runs), "last": str(LAST), "pre_tail": num(pre, 2), "rnd_tail": num(rnd, 2),
            "ratio": num(pre / rnd, 1), "nf1_gap": num(at(runs["pretrained"]["nf1"], end) - at(runs["random"]["nf1"], end),
                                                       sign=True),
            "loss_pre": num(runs["pretrained"]["loss"][-1][1], 2), "loss_rnd": num(runs["random"]["loss"][-1][1], 2),
            "verdict": said, "direction": "is seen here" if pre > rnd else "is not seen here", "ahead_from": f"{min(ahead):,}" if ahead else "-", "end": f"{end:,}",
            "max_bleu": num(max(p[-1] for r in runs.values() for p in r["curve"]), 2),
            "run_pre": runs["pretrained"]["run"], "run_rnd": runs["random"]["run"]}
