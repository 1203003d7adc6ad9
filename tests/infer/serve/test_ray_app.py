"""`deca serve --ray --replicas 2` (infer/serve/ray_app.py): the same app on Ray Serve, on a local Ray instance."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from infer.serve.examples import task_examples
from tests.infra.processes import free_port

from .conftest import LIMITS, assert_same_answers, http

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_server(checkpoint):
    from infer.serve.ray_app import ServeConfig, start_ray, stop_ray

    config = ServeConfig(str(checkpoint), device="cpu", max_batch=4, max_wait_ms=20, limits=LIMITS)
    try:
        yield start_ray(config, replicas=2, host="127.0.0.1", port=free_port())
    finally:
        stop_ray()


def requests() -> list[dict]:
    return [{"id": e["task"], "context": e["context"], "question": e["question"]} for e in task_examples()
            if len(e["context"]) <= LIMITS.max_context_chars][:LIMITS.max_requests]


def test_two_replicas_answer_as_the_model_does(ray_server, predictor):
    from infer.serve.ray_app import replica_states

    assert replica_states() == {"RUNNING": 2}
    asked = requests()
    expected = predictor.answer(predictor.prepare(asked))
    status, answers, headers = http(f"{ray_server}/predict", asked)
    assert status == 200 and float(headers["X-Elapsed-Ms"]) > 0
    assert_same_answers(answers, expected)
    status, answer, _ = http(f"{ray_server}/predict", {k: asked[0][k] for k in ("context", "question")})
    assert status == 200
    assert_same_answers([answer], [{**expected[0], "id": "0"}])


def test_concurrent_calls_are_spread_over_both_replicas(ray_server, predictor):
    asked = requests()
    alone = {r["id"]: a for r, a in
             zip(asked, predictor.answer(predictor.prepare(asked)))}
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda r: http(f"{ray_server}/predict", r)[1], asked * 3))
    assert_same_answers(answers, [alone[r["id"]] for r in asked * 3])
    # two model replicas, in two processes: /health asked 4 at a time (Serve's router sends concurrent calls to
    # the less busy replica; one at a time, a tie can go to the same one every time), for up to a minute on a
    # loaded machine
    pids, deadline = set(), time.monotonic() + 60
    with ThreadPoolExecutor(4) as pool:
        while len(pids) < 2 and time.monotonic() < deadline:
            for _, health, _ in pool.map(lambda _: http(f"{ray_server}/health"), range(4)):
                assert health["serving"] == "ray" and health["device"] == "cpu"
                pids.add(health["pid"])
    assert len(pids) == 2, pids


def test_bad_requests_are_refused_by_the_replicas(ray_server):
    status, body, _ = http(f"{ray_server}/predict", {"context": "a fine film"})
    assert status == 422 and "question: this field is required" in body["error"]
    status, body, _ = http(f"{ray_server}/predict", [{"context": "a", "question": "b"}] * (LIMITS.max_requests + 1))
    assert status == 422 and f"at most {LIMITS.max_requests} requests" in body["error"]
    status, body, _ = http(f"{ray_server}/tasks")
    assert status == 200 and len(body["tasks"]) == len(task_examples())
