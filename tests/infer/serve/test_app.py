"""The HTTP API of `deca serve` (infer/serve/app.py) on a real uvicorn server with a trained miniature model."""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from deca.cli import main
from deca.layout import PRODUCTION
from mqan.decode import SOURCES
from infer.serve.examples import task_examples

from .conftest import LIMITS, STEPS, ThreadServer, assert_same_answers, http


def deca_predict(checkpoint, requests, tmp_path, capsys) -> list[dict]:
    """What `deca predict --checkpoint` writes for `requests`, one JSON object per request."""
    path = tmp_path / "requests.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in requests), encoding="utf-8")
    capsys.readouterr()
    assert main(["predict", "--checkpoint", str(checkpoint), "--input", str(path), "--device", "cpu",
                 "--no-progress"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def check_weights(answer: dict) -> None:
    for step in answer["tokens"]:
        assert step["source"] in SOURCES and set(step["weights"]) == set(SOURCES)
        assert sum(step["weights"].values()) == pytest.approx(1.0, abs=1e-5)
        assert 0.0 < step["probability"] <= 1.0 + 1e-6


def test_one_request_is_answered_as_deca_predict_answers(server, checkpoint, tmp_path, capsys):
    url, _ = server
    ask = {"context": "A great cast makes it sing.", "question": "Is this review negative or positive?"}
    status, answer, headers = http(f"{url}/predict", ask)
    assert status == 200 and float(headers["X-Elapsed-Ms"]) > 0
    (expected,) = deca_predict(checkpoint, [{"id": "0", **ask}], tmp_path, capsys)
    assert_same_answers([answer], [expected])  # the same answer; its numbers up to the model thread's last digits
    assert answer["tokens"] and answer["answer"] in ("positive", "negative")
    check_weights(answer)


def test_many_requests_in_one_call(server, checkpoint, tmp_path, capsys):
    url, _ = server
    examples = [e for e in task_examples() if len(e["context"]) <= LIMITS.max_context_chars
                and len(e["question"]) <= LIMITS.max_question_chars][:LIMITS.max_requests]
    assert len(examples) == LIMITS.max_requests
    requests = [{"id": f"q{i}", "context": e["context"], "question": e["question"]} for i, e in enumerate(examples)]
    status, answers, _ = http(f"{url}/predict", requests)
    assert status == 200 and [a["id"] for a in answers] == [r["id"] for r in requests]
    assert_same_answers(answers, deca_predict(checkpoint, requests, tmp_path, capsys))  # batched otherwise: 1e-6
    for answer in answers:
        check_weights(answer)
    assert any(a["tokens"] for a in answers)
    # without ids, the position is the id, as a string
    status, answers, _ = http(f"{url}/predict", [{k: r[k] for k in ("context", "question")} for r in requests[:2]])
    assert status == 200 and [a["id"] for a in answers] == ["0", "1"]


def test_concurrent_calls_get_their_own_answers(server):
    url, backend = server
    requests = [{"context": e["context"], "question": e["question"], "id": e["task"]} for e in task_examples()
                if len(e["context"]) <= LIMITS.max_context_chars][:8]
    alone = [http(f"{url}/predict", r)[1] for r in requests]
    before = backend.batcher.stats.batches
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(lambda r: http(f"{url}/predict", r)[1], requests * 3))
    assert_same_answers(together, alone * 3)  # each caller gets the answer to its own question
    assert backend.batcher.stats.batches - before <= 3 * len(requests)
    assert backend.batcher.stats.largest <= 4  # --max-batch


BAD = [
    (b'{"context": "a", "question": ', 400, "the body is not valid JSON"),
    (b"\xff\xfe", 400, "not UTF-8"),
    ({"context": "a fine film"}, 422, "question: this field is required"),
    ({"context": 3, "question": "q?"}, 422, "context: must be a string, not a number"),
    ({"context": "a", "question": "q?", "contxt": "b"}, 422, "contxt: unknown field"),
    ({"context": "   ", "question": "q?"}, 422, "context: must contain some text"),
    ({"context": "a", "question": "q?", "id": True}, 422, "id: must be a string or an integer, not a boolean"),
    ({"context": "x" * (LIMITS.max_context_chars + 1), "question": "q?"}, 422,
     f"context: at most {LIMITS.max_context_chars} characters, got {LIMITS.max_context_chars + 1}"),
    ([{"context": "a", "question": "q?"}] * (LIMITS.max_requests + 1), 422,
     f"at most {LIMITS.max_requests} requests in one call, got {LIMITS.max_requests + 1}"),
    ([], 422, "the list of requests is empty"),
    ([{"context": "a", "question": "q?"}, "b"], 422, "[1]: each request must be a JSON object, not a string"),
    ([{"context": "a", "question": "q?", "id": 1}, {"context": "b", "question": "q?", "id": "1"}], 422,
     "[1].id: '1' is also the id of request [0]"),
    ("just a string", 422, "the body is a string"),
    (b"[" * 5_000 + b"]" * 5_000, 400, "the body is JSON nested too deeply"),
    (b'{"context": "a", "question": "q?", "id": ' + b"[" * 5_000 + b"]" * 5_000 + b"}", 400, "nested too deeply"),
    (b"x" * (LIMITS.max_body_bytes + 1), 413, f"at most {LIMITS.max_body_bytes:,} are accepted"),
]


@pytest.mark.parametrize("body,status,message", BAD, ids=[m.split(":")[0][:30] for _, _, m in BAD])
def test_bad_requests_are_refused_with_a_clear_message(server, body, status, message):
    url, _ = server
    raw = body if isinstance(body, bytes) else None
    got, answer, _ = http(f"{url}/predict", None if raw else body, raw=raw, method="POST")
    assert got == status and message in answer["error"], answer
    assert isinstance(answer["errors"], list)


def test_other_routes_and_methods(server):
    url, _ = server
    status, body, _ = http(f"{url}/predict")
    assert status == 405 and body["error"] == "Method Not Allowed"
    status, body, _ = http(f"{url}/nowhere")
    assert status == 404 and body["error"] == "Not Found"


def test_health(server, checkpoint):
    url, backend = server
    status, health, _ = http(f"{url}/health")
    assert status == 200 and health["status"] == "ok" and health["serving"] == "uvicorn"
    assert health["checkpoint"] == str(checkpoint) and health["iteration"] == STEPS and health["device"] == "cpu"
    assert health["limits"]["max_requests"] == LIMITS.max_requests
    assert health["batching"]["max_batch"] == 4 and health["batching"]["rows"] == backend.batcher.stats.rows
    assert health["calls_in_flight"] == 0


def test_tasks_lists_an_example_of_every_decanlp_task(server):
    from deca.registry import DECANLP

    url, _ = server
    status, body, _ = http(f"{url}/tasks")
    assert status == 200
    tasks = {t["task"]: t for t in body["tasks"]}
    assert set(DECANLP) <= set(tasks)
    assert all(t["context"] and t["question"] and t["expected"] and t["description"] for t in body["tasks"])
    assert tasks["sst"]["question"] == "Is this review negative or positive?"


def test_the_demo_page_and_its_files_are_served(server):
    url, _ = server
    import urllib.request

    with urllib.request.urlopen(f"{url}/", timeout=10) as response:
        page = response.read().decode()
        assert response.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in page and 'href="/static/style.css"' in page
    for name, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        with urllib.request.urlopen(f"{url}/static/{name}", timeout=10) as response:
            assert kind in response.headers["content-type"] and response.read()


class DrainedBackend:
    """A backend whose calls end as calls outliving a drain's grace do (Draining), remembering its drain."""

    def __init__(self):
        self.grace: list[float] = []

    async def answer(self, requests: list[dict]) -> list[dict]:
        from infer.serve.engine import Draining

        raise Draining("the server is shutting down and did not answer within its 2 s grace")

    def drain(self, grace_s: float, left_s: float | None = None) -> None:
        self.grace.append(grace_s)

    def health(self) -> dict:
        return {}


def test_a_draining_server_answers_503_with_retry_after_and_one_line():
    """A call the drain did not answer in time, and a call after the drain began: 503, Retry-After, the JSON
    error of every refusal; the backend is told the grace."""
    from infer.serve.app import RETRY_AFTER_S, create_app, drain

    backend = DrainedBackend()
    app = create_app(backend, LIMITS)
    srv = ThreadServer(app)
    try:
        ask = {"context": "a fine film", "question": "Is it positive?"}
        status, body, headers = http(f"{srv.url}/predict", ask)
        assert status == 503 and headers["Retry-After"] == str(RETRY_AFTER_S)
        assert body == {"error": f"the server is shutting down and did not answer within its 2 s grace; retry in "
                                 f"{RETRY_AFTER_S} s", "errors": []}
        drain(app, 1.5)
        assert backend.grace == [1.5]
        status, body, headers = http(f"{srv.url}/predict", ask)
        assert status == 503 and headers["Retry-After"] == str(RETRY_AFTER_S)
        assert body["error"] == f"the server is shutting down and takes no new calls; retry in {RETRY_AFTER_S} s"
        status, health, _ = http(f"{srv.url}/health")
        assert status == 503 and health["status"] == "draining"  # a load balancer sends its calls elsewhere
    finally:
        srv.stop()


@pytest.mark.slow
def test_the_page_installs_with_the_package(tmp_path):
    """A wheel built from the sources carries infer/serve/static (pyproject.toml package-data)."""
    import shutil
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    for package in PRODUCTION:
        shutil.copytree(root / package, src / package, ignore=shutil.ignore_patterns("__pycache__", "*.json",
                                                                                       "plots", "report", "predictions"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "-w", str(tmp_path / "dist"), str(src)], check=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    static = root / "infer" / "serve" / "static"
    assert {f"infer/serve/static/{p.name}" for p in static.iterdir()} <= names
    assert "infer/serve/app.py" in names and "infer/serve_cli.py" in names
