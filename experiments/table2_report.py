"""The Table 2 miniature's table (experiments/table2.sh): for each task and variant, the best validation
headline of each seed, their mean and spread, the change at each step (S2S -> +SAtt -> +CAtt -> +QPtr), and
the paper's single-task figures and changes beside them; then a verdict on each of the paper's claims.

A verdict says "reproduced" when the mean change has the paper's sign and is larger than the spread between
seeds (the largest standard deviation of the two variants compared), "opposite" when it has the other sign
and is larger than that spread, and "within the seed spread" otherwise (or "one seed" when there is no spread).

    .venv/bin/python experiments/table2_report.py checkpoints/table2 [--md docs/results/table2.md]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

VARIANTS = ("s2s", "satt", "catt", "qptr")
NAMES = {"s2s": "S2S", "satt": "+SAtt", "catt": "+CAtt", "qptr": "+QPtr"}
# McCann et al. (2018), Table 2, single-task training, S2S / +SAtt / +CAtt / +QPtr.
PAPER = {"sst": (86.4, 86.8, 86.2, 88.5), "srl": (63.5, 67.8, 74.8, 77.9), "woz.en": (85.3, 86.0, 86.5, 88.0),
         "schema": (43.9, 46.3, 40.4, 48.8)}
LABELS = {"sst": "SST (EM)", "srl": "QA-SRL (nF1)", "woz.en": "WOZ (joint goal EM)", "schema": "MWSC (EM)"}
CLAIMS = [("srl", "satt", "+SAtt raises QA-SRL"), ("srl", "catt", "+CAtt raises QA-SRL"),
          ("schema", "catt", "+CAtt lowers MWSC"), ("schema", "qptr", "+QPtr restores MWSC")]


def read_runs(folder: Path) -> dict[tuple[str, str], list[float]]:
    """{(task, variant): [best headline of each seed]} from every <folder>/*/curve.json."""
    best: dict[tuple[str, str], list[float]] = defaultdict(list)
    for path in sorted(folder.glob("*/curve.json")):
        run = json.loads(path.read_text(encoding="utf-8"))
        if run["curve"]:
            best[(run["task"], run.get("variant", "mqan"))].append(max(p["headline"] for p in run["curve"]))
    return best


def stats(values: list[float]) -> tuple[float, float | None]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None


def judge(change: float, paper: float, sds: list[float | None]) -> str:
    """The verdict on a change of means against the paper's change (the rule of this module's docstring;
    experiments/table3.py uses it too): `sds` are the standard deviations of the two sides compared."""
    if any(sd is None for sd in sds):
        return "one seed"
    spread = max(sds)
    if abs(change) <= spread:
        return f"within the seed spread ({spread:.1f})"
    return "reproduced" if change * paper > 0 else "opposite"


def verdict(best, task: str, variant: str) -> str:
    before = VARIANTS[VARIANTS.index(variant) - 1]
    if not best.get((task, variant)) or not best.get((task, before)):
        return "not run"
    (m1, s1), (m0, s0) = stats(best[(task, variant)]), stats(best[(task, before)])
    change, paper = m1 - m0, PAPER[task][VARIANTS.index(variant)] - PAPER[task][VARIANTS.index(before)]
    said = judge(change, paper, [s0, s1])
    return f"{change:+.1f} (paper {paper:+.1f})" + ("; " if said == "one seed" else ": ") + said


def table(best) -> list[str]:
    lines = ["| task | " + " | ".join(NAMES[v] for v in VARIANTS) + " | paper (single-task) | seeds |",
             "|---|" + "---:|" * len(VARIANTS) + "---|---:|"]
    for task, paper in PAPER.items():
        cells, prev = [], None
        for v in VARIANTS:
            if not best.get((task, v)):
                cells.append("-")
                continue
            mean, sd = stats(best[(task, v)])
            step = f" ({mean - prev:+.1f})" if prev is not None else ""
            cells.append(f"{mean:.1f}{' ± %.1f' % sd if sd is not None else ''}{step}")
            prev = mean
        seeds = max((len(best.get((task, v), [])) for v in VARIANTS), default=0)
        lines.append(f"| {LABELS[task]} | " + " | ".join(cells) + f" | {' / '.join(f'{x:.1f}' for x in paper)} | {seeds} |")
    return lines


def claims(best) -> list[str]:
    lines = ["", "| the paper's claim | here |", "|---|---|"]
    lines += [f"| {text} | {verdict(best, task, variant)} |" for task, variant, text in CLAIMS]
    for task in PAPER:
        means = {v: stats(best[(task, v)])[0] for v in VARIANTS if best.get((task, v))}
        if len(means) == len(VARIANTS):
            top = max(means, key=means.get)
            lines.append(f"| +QPtr best or tied on {LABELS[task]} | best: {NAMES[top]} ({means[top]:.1f}; "
                         f"+QPtr {means['qptr']:.1f}) |")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, help="experiments/table2.sh's OUT (default there: checkpoints/table2)")
    ap.add_argument("--md", type=Path, help="also write the tables to this Markdown file")
    args = ap.parse_args(argv)
    best = read_runs(args.folder)
    if not best:
        ap.error(f"no finished runs (*/curve.json) in {args.folder}")
    text = "\n".join(table(best) + claims(best))
    print(text)
    if args.md:
        args.md.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
