"""Zero-shot with renamed labels (paper Section 4.3; issue 25 item 3), over several trained models: each model
answers the SST question as trained and with its labels renamed (tasks sst.happy_angry and
sst.supportive_unsupportive), greedy, on the processed validation split; the table gives each model's EM, the
mean and spread over models, and what the answers are.

Diagnostics beside the EM, none of them a decoding change: "first word right" (the first answer word is the
gold label; it tells choosing the label apart from stopping after it), "stops" (the answer is one word long),
and, for answers that go on, which source chose their second word (vocabulary, context pointer or question
pointer: the largest share of its probability, Eq. 12-13) and how sure the model was of it.

    deca prepare --tasks sst.happy_angry sst.supportive_unsupportive --mirror ../shared/corpora \\
        --out checkpoints/readme-experiment/processed
    .venv/bin/python -m experiments.zero_shot_report checkpoints/precision/sst-fp32 checkpoints/zero-shot/sst-seed1 ...
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TASKS = ("sst", "sst.happy_angry", "sst.supportive_unsupportive")


def answers_of(model_path: Path, processed: Path, task: str, threads: int) -> tuple[list[dict], list]:
    import torch

    from train.data import read_share
    from mqan.checkpoint import load_model
    from mqan.decode import decode

    torch.set_num_threads(threads)
    model, vocab, _ = load_model(model_path)
    rows = read_share(processed, task, "validation").to_pylist()
    return rows, decode(model, vocab, rows, 256, None, torch.device("cpu"), explain=True)


def second_words(answers: list) -> dict:
    """For answers of two or more tokens: the source that gave the second token (share of answers) and the
    mean probability of that token."""
    from mqan.decode import SOURCES

    seconds = [a.shares[1] for a in answers if len(a.shares) > 1]
    if not seconds:
        return {"answers going on": 0}
    sources = Counter(SOURCES[max(range(3), key=share.__getitem__)] for share in seconds)
    return {"answers going on": len(seconds),
            "second word from": {k: round(100 * n / len(seconds), 1) for k, n in sources.items()},
            "second word probability": round(statistics.mean(sum(share) for share in seconds), 3)}


def show(answer: str) -> str:
    """An answer with runs of one word folded ("unsupportive x100 supportive"), for the listing."""
    words, out = answer.split(), []
    for w in words:
        if out and out[-1][0] == w:
            out[-1][1] += 1
        else:
            out.append([w, 1])
    return " ".join(w if n == 1 else f"{w} x{n}" for w, n in out)


def score(task: str, rows: list[dict], answers: list) -> dict:
    """EM (eval.api) and the diagnostics, with the five most frequent answers."""
    from eval.api import score_task

    texts = [a.text for a in answers]
    em = score_task(task, {str(r["id"]): t for r, t in zip(rows, texts)}, rows)["headline"]["value"]
    first = sum(t.split()[:1] == [r["answer"]] for r, t in zip(rows, texts))
    one_word = sum(len(t.split()) == 1 for t in texts)
    return {"em": float(em), "first word right": 100 * first / len(rows), "stops": 100 * one_word / len(rows),
            "top answers": [(show(a), n) for a, n in Counter(texts).most_common(5)], **second_words(answers)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path, help="run folders (their best/model.pt) or model files")
    ap.add_argument("--processed", type=Path, default=ROOT / "checkpoints" / "readme-experiment" / "processed")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write every figure to this file")
    args = ap.parse_args(argv)
    from deca.runs import model_file

    missing = [t for t in TASKS if not (args.processed / t / "validation").is_dir()]
    if missing:
        ap.error(f"{args.processed} lacks {', '.join(missing)}: run the deca prepare line of --help first")
    results: dict[str, dict[str, dict]] = {}
    for m in args.models:
        results[str(m)] = {t: score(t, *answers_of(model_file(m), args.processed, t, args.threads)) for t in TASKS}
    print("| model | " + " | ".join(f"{t} EM (first word right, stops)" for t in TASKS) + " |")
    print("|---|" + "---:|" * len(TASKS))
    for m, by_task in results.items():
        print(f"| {Path(m).name} | " + " | ".join(
            f"{r['em']:.1f} ({r['first word right']:.1f}, {r['stops']:.0f}%)" for r in by_task.values()) + " |")
    cells = []
    for t in TASKS:
        ems = [by_task[t]["em"] for by_task in results.values()]
        spread = f"{statistics.stdev(ems):.1f}" if len(ems) > 1 else "-"
        cells.append(f"{statistics.mean(ems):.1f} ± {spread} (min {min(ems):.1f}, max {max(ems):.1f})")
    print(f"| mean ± sd over {len(results)} | " + " | ".join(cells) + " |")
    for m, by_task in results.items():
        for t, r in by_task.items():
            print(f"{Path(m).name} {t}: " + ", ".join(f"{a!r} {n}" for a, n in r["top answers"])
                  + f"; going on: {r['answers going on']}, second word from {r.get('second word from')}, "
                  f"p {r.get('second word probability')}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    from deca.errors import DecaError

    try:
        sys.exit(main())
    except DecaError as exc:  # a model or data file that does not fit: one line, as `deca` prints it
        sys.exit(f"error: {exc}")
