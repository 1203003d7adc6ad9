"""The Table 2 miniature's table (experiments/table2.sh): for each task and variant, the best validation
headline of each seed, their mean and spread, the change at each step (S2S -> +SAtt -> +CAtt -> +QPtr), and
the paper's single-task figures and changes beside them; then a verdict on each of the paper's claims.

Each verdict is the project's one rule (eval/verdict.py) on the change of the seed means with its 95% Welch
interval over the seeds (eval/stats.py, `seed_difference`: these runs keep no per-example statistics):
reproduced / opposite when the interval excludes 0 on the paper's side / the other, inconclusive when it
covers 0 (always so with one seed on a side), not tested when a seed's validation curve still rises over the
last third of its iterations or, with --processed, a side's interval reaches the task's chance/majority
baseline computed from the validation data (eval/verdict.py).

    .venv/bin/python experiments/table2_report.py checkpoints/table2 [--md docs/results/table2.md] \
        [--processed data/processed]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from eval.stats import seed_difference, seed_interval  # noqa: E402
from eval.verdict import at_floor, still_rising, verdict as rule  # noqa: E402

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
    for run in _records(folder):
        best[(run["task"], run.get("variant", "mqan"))].append(max(p["headline"] for p in run["curve"]))
    return best


def read_rising(folder: Path) -> dict[tuple[str, str], bool]:
    """{(task, variant): whether a seed's validation curve still rises over the last third of its iterations}."""
    rising: dict[tuple[str, str], bool] = defaultdict(bool)
    for run in _records(folder):
        curve = [(p["iteration"], p["headline"]) for p in run["curve"]]
        key = (run["task"], run.get("variant", "mqan"))
        rising[key] = rising[key] or still_rising(curve, run.get("iterations"))
    return rising


def _records(folder: Path) -> list[dict]:
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*/curve.json"))]
    return [run for run in runs if run["curve"]]


def read_floors(processed: Path | None) -> dict[str, float | None]:
    """{task: its chance/majority baseline on the validation split} (eval/verdict.py); {} without data."""
    if processed is None:
        return {}
    from deca.schema import read_split
    from eval.verdict import baseline

    floors = {}
    for task in PAPER:
        rows = read_split(processed, task, "validation", columns=["answer", "question"]).to_pylist()
        floors[task] = baseline(task, [r["answer"] for r in rows], [r["question"] for r in rows])
    return floors


def stats(values: list[float]) -> tuple[float, float | None]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else None


def judge(before: list[float], after: list[float], paper: float, rising=(), floor: float | None = None) -> str:
    """The verdict (eval/verdict.py) on the change of the seed means, after - before, against the paper's change
    (experiments/table3.py uses it too); `rising`: per side, a curve still rising; `floor`: the task's baseline."""
    floors = [at_floor(seed_interval(side), floor) for side in (before, after)] if floor is not None else ()
    said = rule(seed_difference(before, after), paper, floors=floors, rising=rising)
    return said + (" (one seed)" if min(len(before), len(after)) < 2 else "")


def verdict(best, task: str, variant: str, rising=None, floors=None) -> str:
    before = VARIANTS[VARIANTS.index(variant) - 1]
    if not best.get((task, variant)) or not best.get((task, before)):
        return "not run"
    change = seed_difference(best[(task, before)], best[(task, variant)])
    paper = PAPER[task][VARIANTS.index(variant)] - PAPER[task][VARIANTS.index(before)]
    sides = [(rising or {}).get((task, v), False) for v in (before, variant)]
    said = judge(best[(task, before)], best[(task, variant)], paper, sides, (floors or {}).get(task))
    interval = f" [{change.low:+.1f}, {change.high:+.1f}]" if change.low > float("-inf") else ""
    return f"{change.value:+.1f}{interval} (paper {paper:+.1f}): {said}"


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


def claims(best, rising=None, floors=None) -> list[str]:
    lines = ["", "| the paper's claim | here: change of the seed means [95% interval] (paper): verdict |", "|---|---|"]
    lines += [f"| {text} | {verdict(best, task, variant, rising, floors)} |" for task, variant, text in CLAIMS]
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
    ap.add_argument("--processed", type=Path, metavar="DIR",
                    help="processed data (deca prepare --out): the tasks' chance/majority baselines for 'not tested'")
    args = ap.parse_args(argv)
    best = read_runs(args.folder)
    if not best:
        ap.error(f"no finished runs (*/curve.json) in {args.folder}")
    from deca.errors import DecaError

    try:
        floors = read_floors(args.processed)
    except DecaError as exc:
        raise SystemExit(f"error: {exc}") from None
    text = "\n".join(table(best) + claims(best, read_rising(args.folder), floors))
    print(text)
    if args.md:
        args.md.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
