"""Load check of `deca serve`: uvicorn alone against Ray Serve with 2 replicas, side by side.

Starts each server as its own `deca serve` process on 127.0.0.1 (loopback only), waits for /health,
sends a few warm-up calls, then for each scenario sends `--calls` POST /predict calls from C client
threads (keep-alive sessions) and reports calls per second, questions answered per second, and the
p50/p95 latency of a call. Every scenario is bounded by `--calls` and `--seconds`, whichever comes first.
Each answer is checked (HTTP 200, one answer per question), and the answers of the two servers to the
same questions are compared (same text). The servers are stopped with Ctrl-C (SIGINT), Ray shut down.

Scenarios: one question per call from 1 client (latency alone), one question per call from 8 clients
(the batching queue coalesces them), 8 questions per call from 4 clients.
Questions: the example inputs (infer/serve/examples.py) of --tasks, in turn.

    .venv/bin/python -m bench.serve                               # the README model (SST, WOZ, QA-SRL, MWSC)
    .venv/bin/python -m bench.serve --checkpoint model.pt --calls 100 --seconds 30
    .venv/bin/python -m bench.serve --record docs/results/records/scale/serve-1.json

`--record` writes the settings and, per server and scenario, the figures and every call's latency as JSON
(bench/record.py); the answers stay out, only whether the two servers gave the same ones.
"""
from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import requests

from bench import record

ROOT = Path(__file__).resolve().parents[1]
README_RUN = ROOT / "checkpoints" / "readme-experiment"
CHECKPOINT = README_RUN / "checkpoints" / "fully-joint-20261123-145101" / "best" / "model.pt"
URL = re.compile(r"deca serve: (http://\S+) ")
SCENARIOS = (("1 question/call, 1 client", 1, 1), ("1 question/call, 8 clients", 1, 8),
             ("8 questions/call, 4 clients", 8, 4))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(argv: list[str], env: dict[str, str] | None = None,
           cwd: Path | None = ROOT) -> tuple[subprocess.Popen, list[str], threading.Thread, threading.Event]:
    """`deca serve ARGV` as a process: (it, its stderr lines as they come, their reader, set when it has
    announced its URL)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    proc = subprocess.Popen([sys.executable, "-m", "deca.cli", "serve", *argv], stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True, env=env, cwd=cwd)
    lines: list[str] = []
    found = threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if URL.search(line):
                found.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    return proc, lines, reader, found


def announced_url(lines: list[str]) -> str:
    """The URL `deca serve` announced itself with."""
    return URL.search(next(line for line in lines if URL.search(line))).group(1)


def start(argv: list[str], timeout: float) -> tuple[subprocess.Popen, str, list[str]]:
    """A `deca serve` process and its URL (from the line it announces itself with), once /health answers."""
    proc, lines, _, found = launch(argv, {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})
    if not found.wait(timeout):
        stop(proc)
        raise SystemExit(f"deca serve did not start in {timeout:.0f} s:\n{''.join(lines[-30:])}")
    url = announced_url(lines)
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(f"{url}/health", timeout=5).ok:
                return proc, url, lines
        except requests.ConnectionError:
            pass
        if time.monotonic() > deadline:
            stop(proc)
            raise SystemExit(f"{url}/health does not answer")
        time.sleep(0.2)


def stop(proc: subprocess.Popen) -> None:
    """Ctrl-C, then wait (Ray's shutdown takes seconds); kill only if it hangs."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def questions(tasks: list[str]) -> list[dict]:
    from infer.serve.examples import example_for

    out = []
    for task in tasks:
        ex = example_for(task)
        if ex is None:
            raise SystemExit(f"no example for task {task!r}")
        out.append({"context": ex.context, "question": ex.question, "id": task})
    return out


def load(url: str, pool: list[dict], per_call: int, clients: int, calls: int, seconds: float) -> dict:
    """Send up to `calls` calls of `per_call` questions from `clients` threads; latency and throughput."""
    latencies: list[float] = []
    answers: dict[str, str] = {}
    lock = threading.Lock()
    counter = iter(range(calls))
    deadline = time.monotonic() + seconds

    def client() -> None:
        with requests.Session() as session:
            while time.monotonic() < deadline:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                body = [dict(pool[(n * per_call + k) % len(pool)], id=str(k)) for k in range(per_call)]
                started = time.perf_counter()
                response = session.post(f"{url}/predict", json=body if per_call > 1 else body[0], timeout=120)
                took = time.perf_counter() - started
                if response.status_code != 200:
                    raise RuntimeError(f"HTTP {response.status_code}: {response.text[:300]}")
                got = response.json() if per_call > 1 else [response.json()]
                if len(got) != per_call:
                    raise RuntimeError(f"{len(got)} answers to {per_call} questions")
                with lock:
                    latencies.append(took)
                    for question, answer in zip(body, got):
                        answers[question["context"]] = answer["answer"]

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as executor:
        for future in [executor.submit(client) for _ in range(clients)]:
            future.result()
    wall = time.perf_counter() - started
    latencies.sort()
    return {"calls": len(latencies), "wall": wall, "calls_per_s": len(latencies) / wall,
            "questions_per_s": len(latencies) * per_call / wall,
            "p50_ms": 1000 * statistics.median(latencies),
            "p95_ms": 1000 * latencies[min(len(latencies) - 1, int(0.95 * len(latencies)))],
            "latencies_ms": [round(1000 * t, 1) for t in latencies], "answers": answers}


def run_server(name: str, argv: list[str], pool: list[dict], args) -> dict:
    print(f"starting {name} ...", file=sys.stderr, flush=True)
    t0 = time.perf_counter()
    proc, url, _ = start(argv, args.start_timeout)
    print(f"  {url} up in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    try:
        load(url, pool, 1, 2, 2 * len(pool), args.seconds)  # warm-up: every question once, both replicas
        results = {}
        for label, per_call, clients in SCENARIOS:
            results[label] = load(url, pool, per_call, clients, args.calls, args.seconds)
            r = results[label]
            print(f"  {label}: {r['calls']} calls in {r['wall']:.1f} s", file=sys.stderr, flush=True)
        results["health"] = requests.get(f"{url}/health", timeout=10).json()
        return results
    finally:
        stop(proc)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", default=str(CHECKPOINT), help="model checkpoint (default: the README model)")
    parser.add_argument("--vocab", default=str(README_RUN / "vocab.txt"), help="vocabulary of a format-2 checkpoint")
    parser.add_argument("--tasks", nargs="+", default=["sst", "woz.en", "srl", "schema"],
                        help="whose example inputs to ask (default: the README model's tasks)")
    parser.add_argument("--calls", type=int, default=200, help="calls per scenario, at most (default 200)")
    parser.add_argument("--seconds", type=float, default=60, help="seconds per scenario, at most (default 60)")
    parser.add_argument("--max-batch", type=int, default=32, help="deca serve --max-batch (default 32)")
    parser.add_argument("--max-wait-ms", type=float, default=5, help="deca serve --max-wait-ms (default 5)")
    parser.add_argument("--device", default="cpu", help="deca serve --device (default cpu)")
    parser.add_argument("--start-timeout", type=float, default=300, help="seconds to wait for a server")
    parser.add_argument("--record", type=Path, help="write the settings and figures as JSON here (bench/record.py)")
    args = parser.parse_args()
    started = record.begin("bench.serve")
    pool = questions(args.tasks)
    common = ["--checkpoint", args.checkpoint, "--vocab", args.vocab, "--device", args.device,
              "--max-batch", str(args.max_batch), "--max-wait-ms", str(args.max_wait_ms)]
    local = run_server("uvicorn", [*common, "--port", "0"], pool, args)
    ray = run_server("Ray Serve, 2 replicas", [*common, "--ray", "--replicas", "2", "--port", str(free_port())],
                     pool, args)
    report(local, ray, args)
    same = all(local[s]["answers"].get(c) == a for s, *_ in SCENARIOS for c, a in ray[s]["answers"].items())
    print(f"\nsame answers from both servers: {'yes' if same else 'NO'}")
    if args.record:
        settings = {k: getattr(args, k) for k in ("checkpoint", "vocab", "tasks", "calls", "seconds", "max_batch",
                                                   "max_wait_ms", "device")}
        record.write(args.record, started, settings, {"servers": {"uvicorn": without_answers(local),
                                                                  "ray_serve_2_replicas": without_answers(ray)},
                                                      "same_answers": same})
    return 0 if same else 1


def without_answers(results: dict) -> dict:
    """A server's results for the record: every scenario's figures without its answers, and /health."""
    return {k: {f: v for f, v in r.items() if f != "answers"} if k != "health" else r for k, r in results.items()}


def report(local: dict, ray: dict, args) -> None:
    print(f"\ndeca serve load check: {Path(args.checkpoint).relative_to(ROOT) if Path(args.checkpoint).is_relative_to(ROOT) else args.checkpoint}"
          f" on {args.device}, {os.cpu_count()} CPU cores, max batch {args.max_batch}, max wait {args.max_wait_ms} ms;"
          f" questions: the {', '.join(args.tasks)} examples; clients on the same machine (loopback)")
    head = f"{'scenario':<30} {'server':<22} {'calls':>6} {'calls/s':>8} {'questions/s':>12} {'p50 ms':>8} {'p95 ms':>8}"
    print(head)
    print("-" * len(head))
    for label, *_ in SCENARIOS:
        for name, res in (("uvicorn", local), ("Ray Serve, 2 replicas", ray)):
            r = res[label]
            print(f"{label:<30} {name:<22} {r['calls']:>6} {r['calls_per_s']:>8.1f} {r['questions_per_s']:>12.1f}"
                  f" {r['p50_ms']:>8.1f} {r['p95_ms']:>8.1f}")
        ratio = ray[label]["questions_per_s"] / local[label]["questions_per_s"]
        print(f"{'':<30} {'Ray / uvicorn':<22} {'':>6} {'':>8} {ratio:>11.2f}x"
              f" {ray[label]['p50_ms'] / local[label]['p50_ms']:>7.2f}x {ray[label]['p95_ms'] / local[label]['p95_ms']:>7.2f}x")
    for name, res in (("uvicorn", local), ("Ray (the replica that answered /health)", ray)):
        b = res["health"]["batching"]
        print(f"batching, {name}: {b['batches']} model batches for {b['rows']} questions, largest {b['largest_batch']}")


if __name__ == "__main__":
    sys.exit(main())
