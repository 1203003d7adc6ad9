"""bench/serve_fairness.py's record: what experiments/results/serve_fairness.py and issue 33 need from a run."""
from __future__ import annotations

import argparse
import hashlib
import http.server
import json
import threading
import time

from bench import record
from bench import serve_fairness as bench
from experiments.results import records


def test_the_record_holds_the_run_facts_and_every_sample(tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes(b"weights")
    args = argparse.Namespace(checkpoint=str(model), max_requests=64, max_chars=20_000, small=40, seconds=300,
                              small_every=0.5)
    server = {"name": "budget", "idle": [0.03], "busy": [0.5, 0.7], "large_alone": 80.0, "large": 84.0}
    started = {**record.begin("bench.serve_fairness", ["--checkpoint", str(model)]), "load_before": [0.1, 0.2, 0.3]}
    path = tmp_path / "records" / "serve_fairness.json"
    found = record.write(path, started, bench.settings(args),
                         bench.figures(args, {"encode_row_s": [0.4]}, [server], time.monotonic()))
    assert json.loads(path.read_text(encoding="utf-8")) == found
    assert found["command"].startswith("python -m bench.serve_fairness")
    assert all(field in found["machine"] for field in records.MACHINE_FIELDS)
    assert found["load_before"] == [0.1, 0.2, 0.3] and len(found["load_after"]) == 3
    assert found["model"] == {"path": str(model), "bytes": 7, "sha256": hashlib.sha256(b"weights").hexdigest()}
    assert found["settings"]["small_every"] == 0.5
    assert found["servers"] == [server] and found["target"] == {"small_p99_s": 2.0, "large_slowdown": 0.10}


def test_the_large_call_has_the_requested_size():
    big = bench.large_call(3, 500)
    assert [len(r["context"]) for r in big] == [500, 500, 500] and len({r["id"] for r in big}) == 3


class Answering(http.server.BaseHTTPRequestHandler):
    """Answers every POST at once (a server with nothing else to do)."""

    def do_POST(self):  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def test_small_calls_are_sent_at_most_one_per_small_every_seconds():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        paced = bench.small_latencies(url, 4, 30, since=time.perf_counter(), every=0.2)
        back_to_back = bench.small_latencies(url, 4, 30, every=0.0)
        done = threading.Event()
        done.set()  # a large call already answered: no small call is sent
        assert bench.small_latencies(url, 4, 30, until=done, every=0.2) == []
    finally:
        server.shutdown()
    sent = [at for at, _ in paced]
    assert len(paced) == 4 and all(b - a >= 0.19 for a, b in zip(sent, sent[1:]))
    assert back_to_back[-1][0] - back_to_back[0][0] < 0.2 * 3  # answered at once: not held back
