"""`deca serve --model models:/NAME@ALIAS --follow` (infer/serve/follow.py, app.LocalBackend.swap).

Fast: the swap on the real app's backend, two real models of the miniature checkpoint: calls that came before the
swap are answered by the old model, later ones by the new, each response naming its version (X-Model), and the
old model's batcher stops once its last call is answered; bad --follow options are refused in one line.
Slow: a real `deca serve --follow` process on a real MLflow server (infra/mlflow/server.sh), hammered by calls
while the alias moves: every call gets 200 from one version or the other, named; calls sent after the first
answer of the new version are all the new version's; an alias moved to a version that cannot load leaves the
old one serving, with one line on stderr.
"""
from __future__ import annotations

import asyncio
import signal
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from deca.cli import main
from infer.serve.app import LocalBackend
from infer.serve.engine import Predictor
from infer.serve.follow import DEFAULT_INTERVAL_S
from infer.serve_cli import FOLLOW_S
from tests.infra.conftest import mlflow_server  # noqa: F401  (a real MLflow tracking server)

ASK = {"context": "a fine film , warmly acted .", "question": "Is this review negative or positive?"}


def test_the_default_interval_is_the_one_help_names():
    assert FOLLOW_S == DEFAULT_INTERVAL_S


def test_calls_before_a_swap_are_the_old_models_and_later_ones_the_new(predictor, checkpoint):
    newer = Predictor.load(checkpoint, device="cpu")

    async def scenario():
        backend = LocalBackend(predictor, max_batch=2, max_wait_ms=5, version="1", model_name="decanlp")
        before = [asyncio.create_task(backend.answer_from([{**ASK, "id": str(i)}])) for i in range(6)]
        await asyncio.sleep(0)  # each call has started: it holds the model current when it came
        old = backend.current
        backend.swap(newer, "2")
        assert backend.current.predictor is newer and old in backend.retiring and old.calls == 6
        after = [asyncio.create_task(backend.answer_from([{**ASK, "id": f"n{i}"}])) for i in range(3)]
        got = await asyncio.gather(*before, *after)
        health = backend.health()
        await backend.close()
        return got, old, backend, health

    got, old, backend, health = asyncio.run(scenario())
    assert [label for _, label in got] == ["models:/decanlp/1"] * 6 + ["models:/decanlp/2"] * 3
    assert [answers[0]["id"] for answers, _ in got] == [str(i) for i in range(6)] + ["n0", "n1", "n2"]
    assert len({answers[0]["answer"] for answers, _ in got}) == 1  # the same weights answer the same
    assert backend.retiring == [] and old.batcher._task is None  # stopped after its last call
    assert health["model"] == "models:/decanlp/2" and health["swaps"] == 1


def test_a_swap_with_no_call_in_flight_stops_the_old_batcher_at_once(predictor):
    async def scenario():
        backend = LocalBackend(predictor, version="4", model_name="m")
        await backend.answer_from([{**ASK, "id": "a"}])
        old = backend.current
        backend.swap(predictor, "5")
        await asyncio.sleep(0.05)
        answered = await backend.answer_from([{**ASK, "id": "b"}])
        await backend.close()
        return old, backend, answered

    old, backend, (_, label) = asyncio.run(scenario())
    assert backend.retiring == [] and old.batcher._task is None and label == "models:/m/5"


@pytest.mark.parametrize("argv,message", [
    (["--follow"], "--follow needs --model models:/NAME@ALIAS"),
    (["--model", "models:/decanlp/3", "--follow", "5"], "--follow needs --model models:/NAME@ALIAS"),
    (["--model", "models:/decanlp@champion", "--follow", "0"], "--follow takes a positive number of seconds"),
    (["--model", "models:/decanlp@champion", "--follow", "nan"], "--follow takes a positive number of seconds"),
    (["--model", "models:/decanlp@champion", "--follow", "--ray"], "--follow is not supported with --ray"),
])
def test_bad_follow_options_are_refused_in_one_line(argv, message, capsys):
    assert main(["serve", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


NAME = "decanlp-followed"


@pytest.fixture(scope="module")
def registry(mlflow_server, checkpoint, mini_data, tmp_path_factory):  # noqa: F811
    """The server's URL, with versions 1 and 2 of NAME (two runs' models of the miniature checkpoint, logged as
    `deca register` logs them) and version 3, whose source holds no model; alias champion at version 1."""
    import json

    from mlflow import MlflowClient

    from infer.registry import register_run
    from tests.infer.test_mlflow_model import make_run

    project = (tmp_path_factory.mktemp("follow"), mlflow_server.url, mini_data[1])
    assert [register_run(make_run(project, run, checkpoint), NAME).version for run in ("first", "second")] == ["1", "2"]
    client = MlflowClient(tracking_uri=mlflow_server.url)
    broken = json.loads((make_run(project, "broken", checkpoint) / "deca_run.json").read_text())["mlflow_run_id"]
    client.log_text(broken, "no model here", "junk/README.txt")
    assert client.create_model_version(NAME, f"runs:/{broken}/junk", broken).version in (3, "3")
    client.set_registered_model_alias(NAME, "champion", "1")
    return mlflow_server.url, client


def hammer(url: str, stop: threading.Event, results: list) -> None:
    """POST /predict again and again until `stop`: (sent, answered, status, X-Model) of each call."""
    from .conftest import http

    while not stop.is_set():
        sent = time.monotonic()
        try:
            status, _, headers = http(f"{url}/predict", {**ASK, "id": "h"}, timeout=60)
            results.append((sent, time.monotonic(), status, headers.get("X-Model")))
        except OSError as exc:  # a dropped call: recorded, and the test fails on it
            results.append((sent, time.monotonic(), repr(exc), None))


def wait_until(check, timeout: float, what: str, lines: list[str]) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s; the server said:\n{''.join(lines)}")
        time.sleep(0.05)


@pytest.mark.slow
def test_a_served_alias_that_moves_is_followed_without_dropping_a_call(registry, tmp_path):
    from tests.infra.processes import child_env

    from .conftest import http
    from .test_serve_cli import start

    url, client = registry
    old, new = f"models:/{NAME}/1", f"models:/{NAME}/2"
    env = child_env(MLFLOW_TRACKING_URI=url, DECA_MODEL_CACHE=str(tmp_path / "cache"),
                    MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
    proc, base, lines, reader = start(["--model", f"models:/{NAME}@champion", "--follow", "0.5", "--port", "0",
                                       "--device", "cpu", "--threads", "1"], env=env)
    stop, results = threading.Event(), []
    try:
        wait_until(lambda: answered(f"{base}/health"), 30, "no /health", lines)
        with ThreadPoolExecutor(4) as pool:
            try:
                for _ in range(4):
                    pool.submit(hammer, base, stop, results)
                moved, switched = move_the_alias(client, lines, results, f"models:/{NAME}/2")
            finally:
                stop.set()  # else the pool waits on calls that never end
        _, health, _ = http(f"{base}/health")
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        stop.set()
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    assert {status for _, _, status, _ in results} == {200}, [r for r in results if r[2] != 200][:3]
    assert {label for *_, label in results} == {old, new}  # each named, one version or the other
    assert sum(sent < moved < done for sent, done, *_ in results) >= 2  # calls were in flight as the alias moved
    print(f"{len(results)} calls, {sum(sent < switched for sent, *_ in results)} before the first answer of version 2, "
          f"which came {switched - moved:.2f} s after the move")
    assert all(label == new for sent, _, _, label in results if sent > switched)  # after the move: the new one
    assert health["model"] == new and f"{NAME}-2-" in health["checkpoint"] and health["swaps"] == 1
    said = "".join(lines)
    assert f"models:/{NAME}@champion moved to version 2: now serving it (was version 1)" in said
    assert said.count("which failed to load") == 1 and "still serving version 2" in said, said
    assert code == 0 and "Traceback" not in said, said


def move_the_alias(client, lines: list[str], results: list, new: str) -> tuple[float, float]:
    """While `results` fill: champion to version 2, until calls sent after its first answer are answered, then
    to the broken version 3, until its line is said and calls after it are answered; (when it moved, when the
    first answer of version 2 came)."""
    wait_until(lambda: len(results) >= 8, 60, "no calls answered", lines)
    moved = time.monotonic()
    client.set_registered_model_alias(NAME, "champion", "2")
    wait_until(lambda: any(r[3] == new for r in results), 90, "version 2 never answered", lines)
    switched = min(done for _, done, _, label in results if label == new)
    wait_until(lambda: sum(sent > switched for sent, *_ in results) >= 8, 60, "no calls after the move", lines)
    client.set_registered_model_alias(NAME, "champion", "3")
    wait_until(lambda: any("version 3, which failed to load" in line for line in lines), 90,
               "no line about the broken version 3", lines)
    failed_at = time.monotonic()
    wait_until(lambda: sum(sent > failed_at for sent, *_ in results) >= 4, 60, "no calls after the failure", lines)
    return moved, switched


def answered(url: str) -> bool:
    from .conftest import http

    try:
        return http(url, timeout=5)[0] == 200
    except OSError:
        return False
