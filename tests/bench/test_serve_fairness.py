"""bench/serve_fairness.py's record: what experiments/results/serve_fairness.py and issue 33 need from a run."""
from __future__ import annotations

import argparse
import hashlib
import time

from bench import serve_fairness as bench
from experiments.results import records


def test_the_record_holds_the_run_facts_and_every_sample(tmp_path):
    model = tmp_path / "model.pt"
    model.write_bytes(b"weights")
    args = argparse.Namespace(checkpoint=str(model), max_requests=64, max_chars=20_000, small=40, seconds=300,
                              small_every=0.5)
    server = {"name": "budget", "idle": [0.03], "busy": [0.5, 0.7], "large_alone": 80.0, "large": 84.0}
    found = bench.record(args, {"encode_row_s": [0.4]}, [server], (0.1, 0.2, 0.3), time.monotonic(), "abc1234")
    assert found["commit"] == "abc1234" and found["command"].startswith("python -m bench.serve_fairness")
    assert all(field in found["machine"] for field in records.MACHINE_FIELDS)
    assert found["load_before"] == [0.1, 0.2, 0.3] and len(found["load_after"]) == 3
    assert found["model"] == {"path": str(model), "bytes": 7, "sha256": hashlib.sha256(b"weights").hexdigest()}
    assert found["settings"]["small_every"] == 0.5
    assert found["servers"] == [server] and found["target"] == {"small_p99_s": 2.0, "large_slowdown": 0.10}


def test_the_large_call_has_the_requested_size():
    big = bench.large_call(3, 500)
    assert [len(r["context"]) for r in big] == [500, 500, 500] and len({r["id"] for r in big}) == 3
