"""Do small requests keep being answered while `deca serve` works through the largest legal call?

Starts `deca serve` (uvicorn, 127.0.0.1 only) twice on the same checkpoint, side by side in one run:
- *budgeted*: the default `--batch-tokens` (model batches of bounded work, waiting calls taken in turn);
- *unbudgeted*: `--batch-tokens` so large that only `--max-batch` bounds a batch (what the server did
  before: 32 long contexts in one model batch).
For each it measures the latency of one-sentence calls sent one after another, first with the server
idle, then while one maximal legal call is in flight (`--max-requests` contexts of `--max-chars`
characters), and prints p50 / p99 / max of the small calls and how long the large call took. Every loop is
bounded by `--small` calls and `--seconds`.

    .venv/bin/python -m bench.serve_fairness --checkpoint checkpoints/pipeline/best/model.pt
    .venv/bin/python -m bench.serve_fairness --checkpoint model.pt --max-requests 64 --max-chars 20000
"""
from __future__ import annotations

import argparse
import random
import statistics
import threading
import time

import requests

from bench.serve import free_port, start, stop

SMALL = {"context": "the movie was a delight from start to finish .",
         "question": "Is this review negative or positive?"}
UNBUDGETED = 10**9


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


def small_latencies(url: str, count: int, seconds: float, until: threading.Event | None = None) -> list[float]:
    """Seconds of one-sentence calls sent one after another (stops after `count`, `seconds`, or `until`)."""
    out, deadline = [], time.monotonic() + seconds
    with requests.Session() as session:
        while len(out) < count and time.monotonic() < deadline and not (until and until.is_set()):
            start = time.perf_counter()
            response = session.post(f"{url}/predict", json=SMALL, timeout=seconds)
            response.raise_for_status()
            out.append(time.perf_counter() - start)
    return out


def scenario(url: str, big: list[dict], args) -> dict:
    """Small-call latencies alone and during the large call, and the large call's own time."""
    idle = small_latencies(url, args.small, args.seconds)
    done, took = threading.Event(), {}

    def send_large():
        start = time.perf_counter()
        requests.post(f"{url}/predict", json=big, timeout=args.seconds * 4).raise_for_status()
        took["large"] = time.perf_counter() - start
        done.set()

    thread = threading.Thread(target=send_large)
    thread.start()
    time.sleep(0.5)  # the large call is in the model
    busy = small_latencies(url, args.small, args.seconds, until=done)
    thread.join()
    return {"idle": idle, "busy": busy, "large": took.get("large")}


def describe(values: list[float]) -> str:
    if not values:
        return "no call"
    values = sorted(values)
    p99 = values[min(len(values) - 1, int(0.99 * len(values)))]
    return (f"n={len(values):3d}  p50 {statistics.median(values):6.2f} s  p99 {p99:6.2f} s  "
            f"max {values[-1]:6.2f} s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True, help="the model file to serve")
    ap.add_argument("--max-requests", type=int, default=64, help="requests in the large call (default 64)")
    ap.add_argument("--max-chars", type=int, default=20_000, help="characters of each large context (default 20000)")
    ap.add_argument("--small", type=int, default=40, help="most small calls per measurement (default 40)")
    ap.add_argument("--seconds", type=float, default=300, help="most seconds per measurement (default 300)")
    args = ap.parse_args()
    big = large_call(args.max_requests, args.max_chars - 10)
    results = {}
    for name, extra in (("budgeted (default --batch-tokens)", []),
                        ("unbudgeted (--max-batch only)", ["--batch-tokens", str(UNBUDGETED)])):
        proc, url, _ = start(["--checkpoint", args.checkpoint, "--port", str(free_port()), "--device", "cpu",
                              "--max-requests", str(args.max_requests), "--max-chars", str(args.max_chars), *extra],
                             timeout=300)
        try:
            results[name] = scenario(url, big, args)
        finally:
            stop(proc)
    print(f"one-sentence calls, with and without a call of {args.max_requests} x {args.max_chars:,}-character contexts "
          "in flight")
    for name, r in results.items():
        print(f"{name}\n  idle:                {describe(r['idle'])}\n  during the large call: {describe(r['busy'])}"
              f"\n  the large call took {r['large']:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
