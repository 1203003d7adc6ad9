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
                   "--max-wait-ms", "--batch-tokens", "--slice-ms", "--threads", "--max-requests", "--max-chars", "--ray", "--replicas"):
        assert option in out
    assert "POST /predict" in out and "127.0.0.1" in out


@pytest.mark.parametrize("argv,message", [
    (["--replicas", "2"], "--replicas goes with --ray"),
    (["--max-batch", "0"], "--max-batch must be at least 1"),
    (["--slice-ms", "-1"], "--slice-ms must be at least 0"),
    (["--threads", "0"], "--threads must be at least 1"),
    (["--max-requests", "0"], "--max-requests must be at least 1"),
    (["--ray", "--port", "0"], "--port 0 is not supported with --ray"),
    (["--port", "70000"], "--port must be 0..65535"),
])
def test_inconsistent_options_are_refused(argv, message, checkpoint, capsys):
    assert main(["serve", "--checkpoint", str(checkpoint), *argv]) == 1
    assert message in capsys.readouterr().err


def test_a_missing_checkpoint_is_refused_before_listening(tmp_path, capsys):
    assert main(["serve", "--checkpoint", str(tmp_path / "gone.pt"), "--port", "0"]) == 1
    assert "checkpoint not found" in capsys.readouterr().err
    assert main(["serve", "--run", str(tmp_path), "--port", "0"]) == 1
    assert "the run has no best model" in capsys.readouterr().err


def start(argv: list[str], timeout: float = 120) -> tuple[subprocess.Popen, str, list[str], threading.Thread]:
    """A `deca serve` process, its URL (read from its announcement), its stderr lines and their reader."""
    proc, lines, reader, found = launch(argv, cwd=None)
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
