"""`deca serve --model models:/NAME@ALIAS --follow` (infer/serve/follow.py, app.LocalBackend.swap).

Fast: the swap on the real app's backend, two real models of the miniature checkpoint: calls that came before the
swap are answered by the old model, later ones by the new, each response naming its version (X-Model), and the
old model's batcher stops once its last call is answered; bad --follow options are refused in one line.
Slow: a real `deca serve --follow` process on a real MLflow server (infra/mlflow/server.sh), hammered by calls
while the alias moves: every call gets 200 from one version or the other, named; calls sent after the first
answer of the new version are all the new version's; an alias moved to a version that cannot load leaves the
old one serving, with one line on stderr. The same with the alias polled every 300 s and the MLflow server pushing
the moves (--webhook): each swap comes within seconds, and the webhook is gone after the shutdown. With the
server's webhook disabled, forged and stale deliveries swap nothing (401, a line each) while a signed one swaps.
The webhook is registered once per public URL (a restart updates it), a failed test delivery is said in one line.
"""
from __future__ import annotations

import asyncio
import json
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


SECRET = "the-webhook-secret-of-the-follow-tests"


def serve_following(registry, tmp_path, push: bool, follow_s: float):
    """A `deca serve` process following models:/NAME@champion (reset to version 1) every `follow_s` seconds, with
    the MLflow server pushing moves to it when `push`: (proc, base URL, stderr lines, reader), once it answers
    (and, with `push`, once its webhook is registered and the server's test delivery reached it)."""
    from tests.infra.processes import child_env, free_port

    from .test_serve_cli import start

    url, client = registry
    client.set_registered_model_alias(NAME, "champion", "1")
    port = free_port()
    pushed = ["--webhook", f"http://127.0.0.1:{port}"] if push else []
    env = child_env(MLFLOW_TRACKING_URI=url, DECA_MODEL_CACHE=str(tmp_path / "cache"), DECA_WEBHOOK_SECRET=SECRET,
                    MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
    proc, base, lines, reader = start(["--model", f"models:/{NAME}@champion", "--follow", str(follow_s), *pushed,
                                       "--port", str(port), "--device", "cpu", "--threads", "1"], env=env)
    try:
        wait_until(lambda: answered(f"{base}/health"), 30, "no /health", lines)
        if push:
            wait_until(lambda: any("alias moves are pushed" in line for line in lines), 60, "no webhook", lines)
    except BaseException:
        proc.kill()
        raise
    return proc, base, lines, reader


@pytest.mark.slow
@pytest.mark.parametrize("push", [False, True], ids=["poll", "push"])
def test_a_served_alias_that_moves_is_followed_without_dropping_a_call(registry, tmp_path, push):
    from .conftest import http

    url, client = registry
    old, new = f"models:/{NAME}/1", f"models:/{NAME}/2"
    # pushed, the alias is polled every 5 minutes: a swap within seconds is the webhook's
    proc, base, lines, reader = serve_following(registry, tmp_path, push, 300 if push else 0.5)
    stop, results = threading.Event(), []
    try:
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
    print(f"{'pushed' if push else 'polled'}: {len(results)} calls, {sum(sent < switched for sent, *_ in results)} "
          f"before the first answer of version 2, which came {switched - moved:.2f} s after the move")
    assert all(label == new for sent, _, _, label in results if sent > switched)  # after the move: the new one
    assert health["model"] == new and f"{NAME}-2-" in health["checkpoint"] and health["swaps"] == 1
    said = "".join(lines)
    assert f"models:/{NAME}@champion moved to version 2: now serving it (was version 1)" in said
    assert said.count("which failed to load") == 1 and "still serving version 2" in said, said
    assert code == 0 and "Traceback" not in said, said
    if push:
        assert switched - moved < 15, said  # not the 300 s poll
        assert hook_of(client, base) is None  # deleted at shutdown


def hook_of(client, base: str):
    """The webhook `deca serve` at `base` registered (named by infer/registry_webhook.webhook_name), or None."""
    name = f"deca-serve-127.0.0.1-{base.rsplit(':', 1)[1]}"
    return next((w for w in client.list_webhooks() if w.name == name), None)


@pytest.mark.slow
def test_a_forged_or_stale_push_swaps_nothing_and_mlflows_own_push_swaps_at_once(registry, tmp_path):
    """The server's webhook disabled, the alias moved: a forged and a stale delivery are refused (401, a line each)
    and nothing is swapped for seconds; the same delivery signed now swaps; re-enabled, MLflow's own push does."""
    from tests.infer.serve.test_webhook import payload, signed

    from .conftest import http

    url, client = registry
    proc, base, lines, reader = serve_following(registry, tmp_path, True, 300)
    try:
        hook = hook_of(client, base)
        client.update_webhook(hook.webhook_id, status="DISABLED")
        time.sleep(1.5)  # the MLflow server rereads its webhooks every second (tests/infra/conftest.py)
        client.set_registered_model_alias(NAME, "champion", "2")
        body = payload(NAME, "champion", "2")
        forged = deliver(f"{base}/hooks/mlflow", body, signed(body, "not-the-secret-0123456789"))
        stale = deliver(f"{base}/hooks/mlflow", body, signed(body, SECRET, at=time.time() - 600))
        time.sleep(2)
        unmoved = http(f"{base}/health")[1]
        assert deliver(f"{base}/hooks/mlflow", body, signed(body, SECRET))[0] == 200
        wait_until(lambda: http(f"{base}/health")[1]["swaps"] == 1, 15, "no swap after a signed delivery", lines)
        client.update_webhook(hook.webhook_id, status="ACTIVE")
        time.sleep(1.5)
        moved = time.monotonic()
        client.set_registered_model_alias(NAME, "champion", "1")
        wait_until(lambda: http(f"{base}/health")[1]["swaps"] == 2, 15, "MLflow's push did not swap", lines)
        pushed_in = time.monotonic() - moved
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    said = "".join(lines)
    assert forged[0] == stale[0] == 401 and "bad signature" in forged[1]["error"] and "s old" in stale[1]["error"]
    assert unmoved["swaps"] == 0 and unmoved["model"] == f"models:/{NAME}/1"
    assert said.count("refused a webhook call from 127.0.0.1") == 2, said
    print(f"MLflow's push swapped version 1 back in {pushed_in:.2f} s after the move (polling: every 300 s)")
    assert pushed_in < 15 and code == 0 and "Traceback" not in said, said
    assert hook_of(client, base) is None


@pytest.mark.slow
def test_one_webhook_per_public_url_a_failed_test_delivery_is_said_and_it_is_deleted(mlflow_server):  # noqa: F811
    from mlflow import MlflowClient

    from infer.serve.webhook import Registration

    client = MlflowClient(tracking_uri=mlflow_server.url)
    public = mlflow_server.url  # the MLflow server itself answers its test delivery with 404: not this hook
    said = []
    first = Registration(mlflow_server.url, public, SECRET, 300.0, said.append)
    first.register()
    again = Registration(mlflow_server.url, public + "/", SECRET, 300.0, said.append)
    again.register()
    name = f"deca-serve-127.0.0.1-{public.rsplit(':', 1)[1]}"
    hooks = [w for w in client.list_webhooks() if w.name == name]
    assert len(hooks) == 1 and first.webhook_id == again.webhook_id == hooks[0].webhook_id
    assert hooks[0].url == public + "/hooks/mlflow" and str(hooks[0].status) == "ACTIVE"
    assert len(said) == 2 and all(f"webhook {name} registered, but the tracking server's test delivery to "
                                  f"{public}/hooks/mlflow failed (HTTP 404" in line for line in said), said
    again.stop()
    assert [w for w in client.list_webhooks() if w.name == name] == []
    first.stop()  # already gone: said, not raised
    assert len(said) == 3 and "could not delete the webhook" in said[-1]


def deliver(url: str, body: bytes, headers: dict) -> tuple[int, dict]:
    """POST a webhook delivery as MLflow sends it: (status, JSON answer)."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


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
