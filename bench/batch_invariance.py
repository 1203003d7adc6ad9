"""How far an answer's numbers depend on what else is in its model batch (issue 42 item 1).

`deca serve` batches the rows of concurrent calls, `deca predict` and `deca evaluate` batch the rows of one
file: a row decoded beside others is padded to the longest row and its matrix products are summed in
another order, and a process with another thread count splits them differently. This bench decodes every
row alone (one thread: the reference) and again in random batches of each size with each thread count, and
records per row whether the answer (its text and tokens) changed and the largest absolute difference of a
token's probability and source weights (raw floats, before the 6-digit rounding of `deca predict`'s JSON).

    .venv/bin/python -m bench.batch_invariance --checkpoint checkpoints/pipeline/best/model.pt \\
        --record docs/results/records/batch_invariance.json
"""
from __future__ import annotations

import argparse
import hashlib
import random
from pathlib import Path

import torch

from bench import record

SIZES = (1, 4, 16, 64)
THREADS = (1, 2)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.batch_invariance", description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True, type=Path, help="the model (a best/model.pt)")
    p.add_argument("--vocab", default=None, help="the vocabulary of a format-2 checkpoint (default: its own)")
    p.add_argument("--processed", default="data/processed", help="processed data (validation splits read)")
    p.add_argument("--tasks", default="squad,iwslt.en.de,cnn_dailymail,multinli.in.out,sst,srl,zre,woz.en,wikisql,schema",
                   help="comma-separated tasks whose validation rows are decoded (default: the ten)")
    p.add_argument("--rows", type=int, default=32, help="validation rows per task (default: %(default)s)")
    p.add_argument("--sizes", default=",".join(map(str, SIZES)), help="batch sizes (default: %(default)s)")
    p.add_argument("--threads", default=",".join(map(str, THREADS)), help="thread counts (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="how rows are grouped into batches (default: 0)")
    p.add_argument("--record", type=Path, default=None, help="write the JSON record here")
    return p.parse_args(argv)


def raw_answers(predictor, rows: list[dict]) -> list:
    """mqan.decode's answers (tokens, source weights, shares) of `rows` decoded as one model batch."""
    from mqan.decode import decode

    return decode(predictor.model, predictor.vocab, rows, len(rows), predictor.max_answer_length,
                  predictor.device, explain=True)


def difference(got, ref) -> dict:
    """Whether the answer changed, and the largest |difference| of probability and weights over the
    tokens both answers share."""
    probs = [abs(sum(a) - sum(b)) for a, b in zip(got.shares, ref.shares)]
    weights = [abs(x - y) for a, b in zip(got.weights, ref.weights) for x, y in zip(a, b)]
    return {"same_answer": got.text == ref.text and got.tokens == ref.tokens,
            "probability": max(probs, default=0.0), "weights": max(weights, default=0.0)}


def grouped(n: int, size: int, seed: int) -> list[list[int]]:
    """Row indices shuffled (`seed`) and cut into batches of `size`: neighbours of every length, as the
    calls that happen to arrive together in a server."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[i:i + size] for i in range(0, n, size)]


def measure(predictor, rows: list[dict], sizes: list[int], threads: list[int], seed: int) -> list[dict]:
    """One setting per (threads, batch size): its per-row differences from the row decoded alone on one
    thread."""
    torch.set_num_threads(1)
    reference = [raw_answers(predictor, [row])[0] for row in rows]
    settings = []
    for n_threads in threads:
        torch.set_num_threads(n_threads)
        for size in sizes:
            per_row: list[dict | None] = [None] * len(rows)
            groups = grouped(len(rows), size, seed)
            for idx in groups:
                for i, answer in zip(idx, raw_answers(predictor, [rows[i] for i in idx])):
                    per_row[i] = {"id": rows[i]["id"], "task": rows[i]["task"],
                                  **difference(answer, reference[i])}
            settings.append({"threads": n_threads, "batch_size": size, "batches": [len(g) for g in groups],
                             "rows": per_row})
            print(f"threads {n_threads} batch {size}: {summary(per_row)}", flush=True)
    return settings


def summary(per_row: list[dict]) -> str:
    changed = sum(not r["same_answer"] for r in per_row)
    return (f"{changed} of {len(per_row)} answers changed; largest |dp| {max(r['probability'] for r in per_row):.2e},"
            f" |dw| {max(r['weights'] for r in per_row):.2e}")


def read_rows(processed: str, tasks: list[str], n: int) -> list[dict]:
    """The first `n` validation rows of each task, tagged with it."""
    from infer.evaluate import read_rows as read_split_rows

    return [{**row, "task": task} for task in tasks for row in read_split_rows(processed, task, "validation", n)]


def main(argv: list[str] | None = None) -> int:
    from infer.serve.engine import Predictor

    args = parse_args(argv)
    started = record.begin("bench.batch_invariance", argv)
    tasks = [t for t in args.tasks.split(",") if t]
    sizes, threads = [int(s) for s in args.sizes.split(",")], [int(t) for t in args.threads.split(",")]
    predictor = Predictor.load(args.checkpoint, args.vocab, device="cpu")
    rows = read_rows(args.processed, tasks, args.rows)
    settings = measure(predictor, rows, sizes, threads, args.seed)
    if args.record is not None:
        record.write(args.record, started, {"checkpoint": str(args.checkpoint), "iteration": predictor.iteration,
                                            "sha256": hashlib.sha256(args.checkpoint.read_bytes()).hexdigest(),
                                            "tasks": tasks, "rows_per_task": args.rows, "sizes": sizes,
                                            "threads": threads, "seed": args.seed, "torch": torch.__version__},
                     {"cases": settings})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
