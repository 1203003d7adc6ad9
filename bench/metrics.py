"""Benchmark of the metric suite on the largest real sets we have, and ROUGE with 1 vs 2 processes.

    .venv/bin/python -m bench.metrics [--corpora ../shared/corpora] [--rouge-n 2000] [--repeat 1] \
        [--record docs/results/records/scale/metrics.json]

Part 1 times `eval.api.score_task` (the task's whole suite: headline family + em/nem/nf1) on real gold
rows read with the task modules (SQuAD dev, MRQA SQuAD dev, QA-SRL dev, SST dev, WOZ validation, the
QA-ZRE train subset, MWSC), predictions being the golds with deterministic perturbations.
Part 2 compares, on the same (prediction, gold) pairs, rouge-score used directly (RougeScorer with
use_stemmer=True, one process, as a straightforward port would) with `eval.metrics.rouge` on 1 and 2
processes. There are only 20 real CNN stories here, so the pairs are built from them: gold = the
story's highlights, prediction = a window of 3 consecutive article sentences (a lead-3-like
summary), the window sliding over each article; lengths and vocabulary are those of real CNN text.
The tables show the best of --repeat timings; `--record` writes every timing (bench/record.py).
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import time
from pathlib import Path

from bench import record
from deca.registry import Dropped, get_task
from eval.api import score_task
from eval.metrics import rouge as rouge_mod
from pipelines.rows import to_row

ROOT = Path(__file__).resolve().parents[1]

# (label, task, split, files relative to the corpora; None = the task's own files for the split)
SETS = [
    ("SQuAD dev", "squad", "validation", None),
    ("MRQA SQuAD dev", "mrqa.squad", "validation", None),
    ("QA-SRL dev", "srl", "validation", None),
    ("SST dev", "sst", "validation", None),
    ("WOZ validation", "woz.en", "validation", None),
    ("QA-ZRE train subset", "zre", "train", ["zre/relation_splits/train.very_small.0"]),
    ("MWSC validation", "schema", "validation", None),
]


def gold_rows(corpora: Path, task_name: str, split: str, files: list[str] | None) -> list[dict]:
    task = get_task(task_name)
    paths = [corpora / f for f in files] if files else task.files(split, corpora)
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise FileNotFoundError(", ".join(map(str, missing)))
    options = task.make_options()
    rows = []
    for ex in task.read(split, paths, options):
        if isinstance(ex, Dropped):
            continue
        row = to_row(task, split, ex, options)
        if not isinstance(row, Dropped):
            rows.append(row)
    return rows


def perturbed(rows: list[dict]) -> dict[str, str]:
    """Deterministic predictions: 2/5 exact, 1/5 last word dropped, 1/5 empty, 1/5 another row's answer."""
    out = {}
    for i, row in enumerate(rows):
        kind, answer = i % 5, row["answer"]
        if kind == 2:
            answer = " ".join(answer.split()[:-1])
        elif kind == 3:
            answer = ""
        elif kind == 4:
            answer = rows[(i + 1) % len(rows)]["answer"]
        out[row["id"]] = answer
    return out


def timed(fn, repeat: int) -> tuple[list[float], object]:
    """The seconds of each of `repeat` calls of `fn`, and the last call's result."""
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times, result


def suite_table(corpora: Path, repeat: int) -> list[dict]:
    """Print the metric suite's table (best of `repeat` per set); its rows, with every timing."""
    print(f"## Full metric suite per task (best of {repeat})\n")
    print(f"| set | task | n | headline | value | seconds | examples/s |")
    print("|---|---|---:|---|---:|---:|---:|")
    out = []
    for label, task, split, files in SETS:
        try:
            rows = gold_rows(corpora, task, split, files)
        except (FileNotFoundError, KeyError) as exc:
            print(f"| {label} | {task} | - | skipped: {exc} | | | |")
            out.append({"set": label, "task": task, "skipped": str(exc)})
            continue
        preds = perturbed(rows)
        times, result = timed(lambda: score_task(task, preds, rows), repeat)
        h, seconds = result["headline"], min(times)
        out.append({"set": label, "task": task, "examples": len(rows), "headline": h["name"],
                    "value": h["value"], "seconds": times})
        print(f"| {label} | {task} | {len(rows)} | {h['name']} | {h['value']:.2f} | {seconds:.3f} | "
              f"{len(rows) / seconds:,.0f} |")
    total_n, total_s = suite_total(out)
    print(f"| **all** | | {total_n} | | | {total_s:.3f} | {total_n / max(total_s, 1e-9):,.0f} |\n")
    return out


def suite_total(rows: list[dict]) -> tuple[int, float]:
    """Examples scored and the sum of each set's best time, over the sets not skipped."""
    done = [r for r in rows if "seconds" in r]
    return sum(r["examples"] for r in done), sum(min(r["seconds"]) for r in done)


_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def rouge_pairs(corpora: Path, n: int) -> list[tuple[str, list[str]]]:
    from deca.tasks.cnn_dailymail import parse_story

    stories = sorted((corpora / "cnn_dailymail" / "cnn" / "stories").glob("*.story"))
    if not stories:
        raise FileNotFoundError(corpora / "cnn_dailymail" / "cnn" / "stories")
    parsed = []
    for path in stories:
        article, highlights = parse_story(path)
        sentences = [s for s in _SENTENCE.split(article.lower()) if s.strip()]
        parsed.append((sentences, highlights.lower()))
    pairs, k = [], 0
    while len(pairs) < n:
        for sentences, highlights in parsed:
            start = k % max(1, len(sentences) - 2)
            pairs.append((" ".join(sentences[start:start + 3]), [highlights]))
        k += 1
    return pairs[:n]


def rouge_table(corpora: Path, n: int, repeat: int) -> dict | None:
    """Print the ROUGE comparison (best of `repeat`); every scorer's timings and the pairs' mean words
    (None when there are no CNN stories)."""
    from rouge_score import rouge_scorer

    try:
        pairs = rouge_pairs(corpora, n)
    except FileNotFoundError as exc:
        print(f"ROUGE skipped: no CNN stories at {exc}")
        return None
    preds = [p for p, _ in pairs]
    golds = [g for _, g in pairs]
    words = sum(len(p.split()) + len(g[0].split()) for p, g in pairs) / len(pairs)

    def direct():
        scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
        return [scorer.score(g[0], p) for p, g in pairs]

    runs = [("rouge-score directly (default tokenizer), 1 process", direct)]
    runs += [(f"eval.metrics.rouge, {k} process{'es' if k > 1 else ''}",
              lambda k=k: rouge_mod.rouge(preds, golds, processes=k)) for k in (1, 2)]
    print(f"## ROUGE-1/2/L throughput: {n} pairs from the 20 real CNN stories "
          f"({words:.0f} words per pair), best of {repeat}\n")
    print("| scorer | seconds | pairs/s | speed-up vs direct |")
    print("|---|---:|---:|---:|")
    base = None
    results, times = {}, {}
    for label, fn in runs:
        times[label], results[label] = timed(fn, repeat)
        seconds = min(times[label])
        base = base or seconds
        print(f"| {label} | {seconds:.2f} | {n / seconds:,.0f} | {base / seconds:.2f}x |")
    one, two = (results[label] for label, _ in runs[1:])
    assert one == two, "1 and 2 processes must give identical scores"
    print()
    return {"pairs": n, "words_per_pair": words, "seconds": times, "same_scores_1_and_2_processes": one == two}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=Path(os.environ.get(
        "DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora")), help="the real corpora mirror")
    parser.add_argument("--rouge-n", type=int, default=2000, help="(prediction, gold) pairs for ROUGE")
    parser.add_argument("--repeat", type=int, default=1, help="timed repetitions (the best is shown)")
    parser.add_argument("--skip-suite", action="store_true", help="only the ROUGE comparison")
    parser.add_argument("--record", type=Path, help="write every timing as JSON here (bench/record.py)")
    args = parser.parse_args()
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count()
    started = record.begin("bench.metrics")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# Metric benchmark ({cpus} CPUs visible, load average {load:.2f} at start)\n")
    suite = None if args.skip_suite else suite_table(args.corpora, args.repeat)
    rouge = rouge_table(args.corpora, args.rouge_n, args.repeat)
    if args.record:
        settings = {"corpora": str(args.corpora), "rouge_n": args.rouge_n, "repeat": args.repeat,
                    "skip_suite": args.skip_suite, "cpus_visible": cpus}
        record.write(args.record, started, settings, {"suite": suite, "rouge": rouge})
    return 0


if __name__ == "__main__":
    sys.exit(main())
