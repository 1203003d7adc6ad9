"""Do small requests keep being answered while `deca serve` works through the largest legal call?

First the floor, in this process: how long the model takes to encode one maximal row, to answer it
(encode + greedy decoding), and to answer the one-sentence row; a one-sentence call that must wait for the
row in flight cannot be answered faster. Then `deca serve` (127.0.0.1 only) on the same checkpoint, once per
server setting (`SERVERS`):
- the default `--batch-tokens`, under which each of the large call's rows fits (one to a batch, as two do
  not fit once padded);
- a `--batch-tokens` below one such row: each runs alone, over the budget;
- no budget (only `--max-batch` bounds a batch: 32 long rows at once), for comparison;
- Ray Serve (`--ray`, its default 2 replicas) with the default budget.
Each with the default `--slice-ms`: the batches being decoded take turns in the model thread.
For each: one-sentence calls sent one after another with the server idle (`--small` of them); the large
call alone (`--max-requests` contexts of `--max-chars` characters); the large call again, with one-sentence
calls sent one after another until it is answered, each as soon as the previous is answered but at most one
per `--small-every` seconds (the same offered load on every server). It prints p50 / p99 / max of the small calls and how long
the large call took alone and beside them; `--record PATH` writes all of it as JSON (every latency sample,
the machine, load before and after, the model file's sha256 and size, the commit), which
experiments/results/serve_fairness.py turns into docs/results/serve_fairness.md. Run it on a quiet machine,
under `flock /tmp/bench.lock` where other measurements may run.

    python -m bench.serve_fairness --checkpoint checkpoints/pipeline/best/model.pt \\
        --record docs/results/records/serve_fairness.json
    python -m bench.serve_fairness --checkpoint model.pt --servers budget ray --max-requests 16
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import requests

from bench.serve import free_port, start, stop

SMALL = {"context": "the movie was a delight from start to finish .",
         "question": "Is this review negative or positive?"}
UNBUDGETED = 10**9
OVER_BUDGET = 2_000  # --batch-tokens of the 'rows over the budget' setting: about half a maximal row
# name -> (what it is, the `deca serve` options)
SERVERS = {
    "budget": ("uvicorn, default --batch-tokens: each large row under it", []),
    "over": (f"uvicorn, --batch-tokens {OVER_BUDGET}: each large row over it", ["--batch-tokens", str(OVER_BUDGET)]),
    "unbudgeted": ("uvicorn, no token budget (--max-batch 32 only)", ["--batch-tokens", str(UNBUDGETED)]),
    "ray": ("Ray Serve, 2 replicas, default --batch-tokens", ["--ray"]),
}
SMALL_EVERY = 0.5  # seconds: the same offered load of small calls on every server; back to back (0), a server
# that answers them at once (Ray's second replica) gets 20 a second, whose HTTP work takes the large call's CPU
TARGET = {"small_p99_s": 2.0, "large_slowdown": 0.10}  # issue 34 item 2


def large_call(n: int, chars: int, seed: int = 0) -> list[dict]:
    """`n` requests whose contexts have `chars` characters of English-like words."""
    rng = random.Random(seed)
    words = "the a film story actor plot scene music long good bad slow funny quiet city river night day".split()
    out = []
    for i in range(n):
        text = []
        while sum(len(w) + 1 for w in text) < chars:
            text.append(rng.choice(words))
        out.append({"id": f"long{i}", "context": " ".join(text)[:chars - 1] + ".", "question": "what is it about?"})
    return out


def small_latencies(url: str, count: int, seconds: float, until: threading.Event | None = None,
                    since: float | None = None, every: float = 0.0) -> list[list[float]]:
    """[seconds after `since` the call was sent, its latency] of one-sentence calls sent one after another,
    each as soon as the previous is answered but no sooner than `every` seconds after the previous was sent
    (stops after `count`, `seconds`, or once `until` is set)."""
    out, deadline = [], time.monotonic() + seconds
    since = time.perf_counter() if since is None else since
    with requests.Session() as session:
        while len(out) < count and time.monotonic() < deadline and not (until and until.is_set()):
            sent = time.perf_counter()
            response = session.post(f"{url}/predict", json=SMALL, timeout=seconds)
            response.raise_for_status()
            out.append([round(sent - since, 4), round(time.perf_counter() - sent, 4)])
            if until is not None:
                until.wait(max(0.0, sent + every - time.perf_counter()))
            else:
                time.sleep(max(0.0, sent + every - time.perf_counter()))
    return out


def timed_large(url: str, big: list[dict], seconds: float) -> float:
    """Seconds the large call took."""
    started = time.perf_counter()
    requests.post(f"{url}/predict", json=big, timeout=seconds).raise_for_status()
    return round(time.perf_counter() - started, 3)


def scenario(url: str, big: list[dict], small: int, seconds: float, alone: bool = True, every: float = 0.0) -> dict:
    """Small-call latencies idle and during the large call, and the large call's seconds alone (when `alone`)
    and beside the small calls, which are sent one after another (at most one per `every` seconds) from 0.5 s
    after it until it is answered."""
    idle = [lat for _, lat in small_latencies(url, small, seconds)]
    large_alone = timed_large(url, big, seconds * 4) if alone else None
    done, took = threading.Event(), {}

    def send_large():
        try:
            took["large"] = timed_large(url, big, seconds * 4)
        finally:
            done.set()

    sent = time.perf_counter()
    thread = threading.Thread(target=send_large)
    thread.start()
    time.sleep(0.5)  # the large call is in the model
    busy = small_latencies(url, 10**6, seconds * 4, until=done, since=sent, every=every)
    thread.join()
    return {"idle": idle, "busy": [lat for _, lat in busy], "busy_sent_at": [at for at, _ in busy],
            "large_alone": large_alone, "large": took.get("large")}


def floor(checkpoint: str, big: list[dict], repeats: int = 3) -> dict:
    """Seconds (each repeat) to encode one maximal row, to answer it, to answer the one-sentence row, and to
    prepare (tokenize) the whole large call, in this process on the CPU with `deca serve`'s torch threads; a
    maximal row answered once with a thread per core (torch's default); and the rows' token counts."""
    import torch

    from infer.limits import row_cost
    from infer.serve.engine import Predictor
    from infer.serve_cli import DEFAULT_THREADS
    from mqan.batch import collate

    torch.set_num_threads(DEFAULT_THREADS)  # as `deca serve` runs the model
    predictor = Predictor.load(checkpoint, device="cpu")
    started = time.perf_counter()
    rows = predictor.prepare(big)
    prepare_s = time.perf_counter() - started
    small = predictor.prepare([{**SMALL, "id": "small"}])
    predictor.answer(small)  # warm-up

    def times(fn, repeats: int = repeats) -> list[float]:
        out = []
        for _ in range(repeats):
            started = time.perf_counter()
            fn()
            out.append(round(time.perf_counter() - started, 4))
        return out

    with torch.inference_mode():
        encode = times(lambda: predictor.model.encode(collate(rows[:1], predictor.vocab, predictor.device)))
    answer = predictor.answer(rows[:1])[0]
    torch.set_num_threads(os.cpu_count() or 1)  # torch's own default, which deca serve leaves one core short of
    all_cores = times(lambda: predictor.answer(rows[:1]), 1)
    torch.set_num_threads(DEFAULT_THREADS)
    return {"threads": DEFAULT_THREADS, "encode_row_s": encode, "answer_row_all_cores_s": all_cores,
            "all_cores": os.cpu_count(), "answer_row_s": times(lambda: predictor.answer(rows[:1])),
            "answer_small_s": times(lambda: predictor.answer(small)), "prepare_call_s": round(prepare_s, 3),
            "row_tokens": sorted({row_cost(r) for r in rows}), "small_tokens": row_cost(small[0]),
            "row_answer_tokens": len(answer["tokens"]), "iteration": predictor.iteration}


def server(name: str, args, big: list[dict]) -> dict:
    """One server setting of `SERVERS`, started, measured (`scenario`) and stopped."""
    what, extra = SERVERS[name]
    argv = ["--checkpoint", args.checkpoint, "--port", str(free_port()), "--device", "cpu",
            "--max-requests", str(args.max_requests), "--max-chars", str(args.max_chars), *extra]
    load_before = os.getloadavg()
    print(f"{what} ...", file=sys.stderr, flush=True)
    proc, url, _ = start(argv, timeout=300)
    try:
        found = scenario(url, big, args.small, args.seconds, every=args.small_every)
        health = requests.get(f"{url}/health", timeout=30).json()
    finally:
        stop(proc)
    return {"name": name, "what": what, "options": extra, **found, "batching": health.get("batching"),
            "load_before": load_before, "load_after": os.getloadavg()}


def file_facts(path: str) -> dict:
    """The model file's path, size and sha256."""
    data = Path(path).read_bytes()
    return {"path": path, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


def settings(args) -> dict:
    """The bench's settings, as its record holds them."""
    return {"max_requests": args.max_requests, "max_chars": args.max_chars, "small": args.small,
            "seconds": args.seconds, "small_every": args.small_every, "small_call": SMALL}


def figures(args, found: dict, servers: list[dict], started: float) -> dict:
    """What one bench run found, for its record (bench/record.py adds the command, commit, machine and load;
    experiments/results/serve_fairness.py reads it): the minutes it took, the model file, the target, the floor
    and every server setting's samples."""
    return {"minutes": round((time.monotonic() - started) / 60, 1), "model": file_facts(args.checkpoint),
            "target": TARGET, "floor": found, "servers": servers}


def describe(values: list[float]) -> str:
    if not values:
        return "no call"
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
    return (f"n={len(values):3d}  p50 {statistics.median(values):6.2f} s  p99 {p99:6.2f} s  "
            f"max {values[-1]:6.2f} s")


def report_floor(found: dict) -> None:
    print(f"floor ({found['threads']} threads): one row of {found['row_tokens'][-1]:,} tokens: encode "
          f"{statistics.median(found['encode_row_s']):.2f} s, answer ({found['row_answer_tokens']} tokens) "
          f"{statistics.median(found['answer_row_s']):.2f} s ({found['answer_row_all_cores_s'][0]:.2f}"
          f" s with {found['all_cores']} threads); the one-sentence row {statistics.median(found['answer_small_s']):.3f} s", flush=True)


def report(servers: list[dict]) -> None:
    for r in servers:
        print(f"{r['what']}\n  idle:                  {describe(r['idle'])}\n  during the large call: "
              f"{describe(r['busy'])}\n  the large call took {r['large_alone']:.1f} s alone, {r['large']:.1f} s "
              "beside the small calls")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="the model file to serve")
    ap.add_argument("--max-requests", type=int, default=64, help="requests in the large call (default 64)")
    ap.add_argument("--max-chars", type=int, default=20_000, help="characters of each large context (default 20000)")
    ap.add_argument("--small", type=int, default=40, help="small calls with the server idle (default 40)")
    ap.add_argument("--small-every", type=float, default=SMALL_EVERY,
                    help="during the large call, send a one-sentence call at most every this many seconds, each as "
                    f"soon as the previous is answered (default {SMALL_EVERY}; 0: back to back)")
    ap.add_argument("--seconds", type=float, default=300, help="most seconds of a small-call loop; the large call "
                    "may take 4 times that (default 300)")
    ap.add_argument("--servers", nargs="+", choices=list(SERVERS), default=list(SERVERS),
                    help="which server settings (default: all)")
    ap.add_argument("--record", type=Path, help="write the JSON record here")
    args = ap.parse_args()
    if not Path(args.checkpoint).is_file():
        ap.error(f"--checkpoint {args.checkpoint}: no such file")
    from bench import record

    started, facts = time.monotonic(), record.begin("bench.serve_fairness")  # the code the servers run
    big = large_call(args.max_requests, args.max_chars - 10)
    found = floor(args.checkpoint, big)
    report_floor(found)
    servers = [server(name, args, big) for name in args.servers]
    report(servers)
    if args.record:
        record.write(args.record, facts, settings(args), figures(args, found, servers, started))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
