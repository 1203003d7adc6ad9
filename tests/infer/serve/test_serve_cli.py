"""`deca serve` on the command line (infer/serve_cli.py): options, refusals, and a real server process."""
from __future__ import annotations

import signal
import subprocess
import threading
import time

import pytest

from bench.serve import announced_url, launch
from deca.cli import main

from .conftest import http


def test_help_names_every_option(capsys):
    with pytest.raises(SystemExit) as done:
        main(["serve", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for option in ("--run", "--checkpoint", "--vocab", "--host", "--port", "--device", "--max-batch",
                   "--max-wait-ms", "--batch-tokens", "--slice-ms", "--threads", "--max-requests", "--max-chars", "--ray", "--replicas",
                   "--grace-s"):
        assert option in out
    assert "POST /predict" in out and "127.0.0.1" in out
    assert "SIGTERM drains it" in out and "exits with status 0" in out


@pytest.mark.parametrize("argv,message", [
    (["--replicas", "2"], "--replicas goes with --ray"),
    (["--max-batch", "0"], "--max-batch must be at least 1"),
    (["--slice-ms", "-1"], "--slice-ms must be at least 0"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--max-requests", "0"], "--max-requests must be at least 1"),
    (["--ray", "--port", "0"], "--port 0 is not supported with --ray"),
    (["--port", "70000"], "--port must be 0..65535"),
    (["--slice-ms", "nan"], "--slice-ms must be a finite number, got nan (e.g. --slice-ms 1000)"),
    (["--slice-ms", "inf"], "--slice-ms must be a finite number, got inf"),
    (["--max-wait-ms", "nan"], "--max-wait-ms must be a finite number, got nan (e.g. --max-wait-ms 5)"),
    (["--max-wait-ms", "-1"], "--max-wait-ms must be at least 0"),
    (["--grace-s", "nan"], "--grace-s must be a finite number, got nan (e.g. --grace-s 30)"),
    (["--grace-s", "inf", "--ray"], "--grace-s must be a finite number, got inf"),
    (["--grace-s", "-1"], "--grace-s must be at least 0, got -1"),
])
def test_inconsistent_options_are_refused(argv, message, checkpoint, capsys):
    assert main(["serve", "--checkpoint", str(checkpoint), *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_a_missing_checkpoint_is_refused_before_listening(tmp_path, capsys):
    assert main(["serve", "--checkpoint", str(tmp_path / "gone.pt"), "--port", "0"]) == 1
    assert "checkpoint not found" in capsys.readouterr().err
    assert main(["serve", "--run", str(tmp_path), "--port", "0"]) == 1
    assert "the run has no best model" in capsys.readouterr().err


def start(argv: list[str], timeout: float = 120,
          env: dict[str, str] | None = None) -> tuple[subprocess.Popen, str, list[str], threading.Thread]:
    """A `deca serve` process, its URL (read from its announcement), its stderr lines and their reader."""
    proc, lines, reader, found = launch(argv, env, cwd=None)
    if not found.wait(timeout):
        proc.kill()
        proc.wait()
        raise AssertionError(f"deca serve did not announce its URL in {timeout} s:\n{''.join(lines)}")
    return proc, announced_url(lines), lines, reader


@pytest.mark.slow
def test_deca_serve_process_answers_and_stops_on_ctrl_c(checkpoint):
    proc, url, lines, reader = start(["--checkpoint", str(checkpoint), "--port", "0", "--device", "cpu",
                              "--max-requests", "2"])
    try:
        assert url.startswith("http://127.0.0.1:")  # loopback by default
        deadline = time.monotonic() + 30
        while True:
            try:
                status, health, _ = http(f"{url}/health", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        assert status == 200 and health["checkpoint"] == str(checkpoint)
        assert health["limits"]["max_requests"] == 2
        status, answer, _ = http(f"{url}/predict", {"context": "A great cast makes it sing.",
                                                    "question": "Is this review negative or positive?"})
        assert status == 200 and answer["answer"] in ("positive", "negative")
        status, body, _ = http(f"{url}/predict", [{"context": "a", "question": "b"}] * 3)
        assert status == 422 and "at most 2 requests" in body["error"]
    finally:
        proc.send_signal(signal.SIGINT)  # Ctrl-C: uvicorn shuts down gracefully, then re-raises it
        code = proc.wait(timeout=30)
        reader.join(timeout=10)
    assert code == 130 and lines[-1] == "interrupted\n", "".join(lines)
    assert "Traceback" not in "".join(lines)


@pytest.mark.fault("fault", "SIGTERM to deca serve with 5 calls in flight: all answered, exit 0",
                   "issue 34: shutdown and concurrency")
@pytest.mark.slow
def test_sigterm_answers_the_calls_in_flight_and_exits_0(checkpoint):
    """SIGTERM (a service manager stopping the server): calls in flight are answered, then exit status 0."""
    from concurrent.futures import ThreadPoolExecutor

    proc, url, lines, reader = start(["--checkpoint", str(checkpoint), "--port", "0", "--device", "cpu"])
    body = [{"context": "the film was a delight , warm and sharp . " * 40, "question": "Is it positive?"}] * 16
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                http(f"{url}/health", timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        with ThreadPoolExecutor(5) as pool:
            calls = [pool.submit(http, f"{url}/predict", body, timeout=60) for _ in range(5)]
            time.sleep(0.3)
            proc.send_signal(signal.SIGTERM)
            results = [c.result() for c in calls]
        code = proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    assert [status for status, _, _ in results] == [200] * 5
    assert all(len(answers) == 16 for _, answers, _ in results)
    assert code == 0, "".join(lines)
    assert "Traceback" not in "".join(lines)


def calls_in_flight(url: str, count: int, timeout: float = 60, done=lambda: False) -> None:
    """Wait until the server answers GET /health with `count` POST /predict calls in flight (so that a signal
    finds them there), or until `done()`."""
    deadline = time.monotonic() + timeout
    while not done():
        try:
            if http(f"{url}/health", timeout=10)[1].get("calls_in_flight") == count:
                return
        except OSError:  # not listening yet
            pass
        assert time.monotonic() < deadline, f"{count} calls were not in flight within {timeout} s"
        time.sleep(0.05)


def replicas_hold(url: str, count: int, timeout: float = 60, done=lambda: False) -> None:
    """Wait until Serve's replicas together hold `count` calls (each GET /health names its replica and that
    replica's calls in flight; the latest count of each is summed), or until `done()`."""
    seen: dict[str, int] = {}
    deadline = time.monotonic() + timeout
    while not done() and sum(seen.values()) != count:
        assert time.monotonic() < deadline, f"the replicas did not hold {count} calls within {timeout} s: {seen}"
        body = http(f"{url}/health", timeout=10)[1]
        seen[body["replica"]] = body["calls_in_flight"]
        time.sleep(0.05)


def answered_or_refused(results: list) -> list[int]:
    """The statuses of `results`, after checking each is an answer or a 503 with Retry-After and a JSON error."""
    for status, body, headers in results:
        assert status in (200, 503), (status, body)
        if status == 503:
            assert int(headers["Retry-After"]) > 0 and "shutting down" in body["error"] and body["errors"] == []
    return [status for status, _, _ in results]


def new_calls_refused(url: str, within: float) -> str:
    """How new calls are refused (no connection, or 503 with Retry-After) at the latest `within` seconds from
    now; until then a new call may still be answered, or closed as the listener closes."""
    import urllib.error
    from http.client import RemoteDisconnected

    deadline = time.monotonic() + within
    while True:
        try:
            status, body, headers = http(f"{url}/predict", {"context": "a", "question": "b?"}, timeout=10)
        except urllib.error.URLError as exc:
            assert isinstance(exc.reason, (ConnectionRefusedError, ConnectionResetError)), exc
            if isinstance(exc.reason, ConnectionRefusedError):
                return "connection refused"
        except (ConnectionResetError, RemoteDisconnected):  # accepted as the listener closed
            pass
        else:
            assert status in (200, 503), (status, body)
            if status == 503:
                # refused at once, or taken just before the drain began and not answered within the grace
                assert int(headers["Retry-After"]) > 0 and "the server is shutting down" in body["error"], body
                return "503"
        assert time.monotonic() < deadline, f"new calls were still taken {within} s after the signal"
        time.sleep(0.1)


@pytest.mark.fault("fault", "SIGTERM to deca serve --grace-s 3 with 4 heavy calls and a small one in flight: the "
                            "small one answered, the rest 503 with Retry-After, listener closed, exit 0",
                   "issue 42: serving drains")
@pytest.mark.slow
def test_sigterm_answers_what_finishes_in_the_grace_and_503s_the_rest(checkpoint):
    """Issue 42: SIGTERM with 4 heavy calls (64 long contexts each, far more than --grace-s 3 of work on any machine
    the tests run on; a one-sentence call waits for at most one encoder turn of each, about a second) and a
    one-sentence call in flight: new calls are refused, the small call is answered, each heavy call is answered
    or gets 503 with Retry-After (some do: fair turns finish them all late), no bare 500, no traceback, exit 0."""
    from concurrent.futures import ThreadPoolExecutor

    proc, url, lines, reader = start(["--checkpoint", str(checkpoint), "--port", "0", "--device", "cpu",
                                      "--grace-s", "3", "--slice-ms", "50"])
    heavy = [{"context": "the film was a delight , warm and sharp . " * 400, "question": "Is it positive?"}] * 64
    light = {"context": "a fine film .", "question": "Is it positive?"}
    try:
        calls_in_flight(url, 0)
        with ThreadPoolExecutor(5) as pool:
            calls = [pool.submit(http, f"{url}/predict", heavy, timeout=120) for _ in range(4)]
            calls_in_flight(url, 4)
            calls.append(pool.submit(http, f"{url}/predict", light, timeout=120))
            calls_in_flight(url, 5, done=calls[-1].done)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            # uvicorn stops listening once the event loop handles the signal: at once on a quiet machine, later on
            # a loaded CI, and always well before the heavy calls could end
            assert new_calls_refused(url, within=10) == "connection refused"
            results = [c.result() for c in calls]
        code = proc.wait(timeout=60)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    statuses = answered_or_refused(results)
    assert statuses[-1] == 200 and results[-1][1]["answer"]
    assert 503 in statuses[:4], statuses
    assert all(len(answers) == 64 for status, answers, _ in results[:4] if status == 200)
    assert code == 0 and took < 30, (code, took, "".join(lines))
    assert "Traceback" not in "".join(lines), "".join(lines)


@pytest.mark.fault("fault", "SIGTERM to deca serve --ray --replicas 2 with 5 calls in flight: each answered or "
                            "503 with Retry-After, none dropped, exit 0",
                   "issue 42: serving drains")
@pytest.mark.slow
def test_sigterm_to_ray_serve_drains_both_replicas_and_exits_0(checkpoint):
    """Issue 42: SIGTERM to `deca serve --ray --replicas 2 --grace-s 3` with 4 heavy calls and a one-sentence
    call in flight (not dropped when Serve shuts its proxy down): new calls are refused, the small call is
    answered, each heavy call is answered or gets 503 with Retry-After, no traceback, exit 0 (not 130)."""
    from concurrent.futures import ThreadPoolExecutor

    from bench.serve import free_port

    proc, url, lines, reader = start(["--checkpoint", str(checkpoint), "--port", str(free_port()), "--device", "cpu",
                                      "--ray", "--replicas", "2", "--grace-s", "3", "--slice-ms", "50"],
                                     timeout=300, env={"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"})
    # 64 contexts of 8,000 characters: 32 batches of 2 rows a call, more than 10 s of a replica's work
    heavy = [{"context": "the film was a delight , warm and sharp . " * 400, "question": "Is it positive?"}] * 64
    light = {"context": "a fine film .", "question": "Is it positive?"}
    try:
        calls_in_flight(url, 0, timeout=120)
        with ThreadPoolExecutor(5) as pool:
            calls = [pool.submit(http, f"{url}/predict", heavy, timeout=180) for _ in range(4)]
            # GET /health names one replica's calls; a call that reaches a replica after the signal is refused
            # (503) by it, as Serve's proxy listens until the replicas have drained
            deadline = time.monotonic() + 60
            while http(f"{url}/health", timeout=10)[1]["calls_in_flight"] == 0:
                assert time.monotonic() < deadline, "no call was in flight within 60 s"
                time.sleep(0.05)
            calls.append(pool.submit(http, f"{url}/predict", light, timeout=180))
            replicas_hold(url, 5, done=calls[-1].done)  # the light call has reached a replica (or is answered)
            proc.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            assert new_calls_refused(url, within=10) == "503"  # Serve's proxy listens until the replicas drained
            results = [c.result() for c in calls]
        code = proc.wait(timeout=120)
        took = time.monotonic() - signalled
    finally:
        if proc.poll() is None:
            proc.kill()
        reader.join(timeout=10)
    statuses = answered_or_refused(results)
    assert statuses[-1] == 200 and results[-1][1]["answer"]
    assert 503 in statuses[:4], statuses
    assert code == 0 and took < 60, (code, took, "".join(lines))
    assert "Traceback" not in "".join(lines), "".join(lines)
