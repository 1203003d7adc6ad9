"""No orphans (deca/processes.py): what the project or its tests start dies with its parent, SIGKILL included.

The fast tests kill a small Python parent that spawned a guarded command whose grandchildren include one in
a session of its own, and a pytest run whose test started plain children (the test session's guard,
tests/conftest.py). The slow one kills a pytest run that holds the MLflow-server fixture
(tests/infra/conftest.py) once the server answers, and checks that the server, its workers and the watchdogs
are all gone within 30 s. Every process of a run carries DECA_ORPHAN_PROBE=<its scratch folder> in its
environment, which is how `leftovers` finds them; whatever a failed test leaves is killed and reported.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from deca.processes import spawn
from tests.conftest import ROOT
from tests.infra.processes import VENV_BIN, Daemon, answers, child_env, leftovers, sweep, wait_for

GONE_WITHIN_S = 30

PARENT = """
import json, os, sys, time
sys.path.insert(0, {root!r})
from deca.processes import spawn
cmd = spawn(["bash", "-c", "sleep 600 & setsid sleep 600 & wait"])
time.sleep(1)  # the grandchildren are forked
print(json.dumps({{"leader": cmd.proc.pid, "watchdog": cmd.watchdog.proc.pid}}), flush=True)
while not os.path.exists(sys.argv[2]):  # the test's go
    time.sleep(0.1)
if sys.argv[1] == "exit":
    os._exit(0)  # no cleanup at all
time.sleep(600)
"""

RAY_DRIVER = """
import json, os, sys, time
sys.path.insert(0, {root!r})
from deca.config import Params
from train.ray_session import start_ray
import ray
start_ray(Params())
pids = ray.get([ray.remote(lambda: os.getpid()).remote() for _ in range(2)])
print(json.dumps({{"workers": pids}}), flush=True)
time.sleep(600)
"""


def json_line(log: Path) -> dict | None:
    """The last line of `log` that is a JSON object (what the scripts above print when ready), or None."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines and lines[-1].endswith("}") else None


def describe(pids: list[int]) -> str:
    out = []
    for pid in pids:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            out.append(f"{pid}: {cmdline[:200]}")
        except OSError:
            out.append(f"{pid}: (gone)")
    return "\n".join(out)


def assert_all_gone(probe: Path, what: str) -> None:
    """Wait up to GONE_WITHIN_S for every process marked with `probe` to end; fail naming them."""
    deadline = time.monotonic() + GONE_WITHIN_S
    while leftovers(str(probe)) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = leftovers(str(probe))
    assert not left, f"{what}: still running after {GONE_WITHIN_S} s:\n{describe(left)}"


@pytest.fixture
def probe(tmp_path):
    """A scratch folder whose path marks every process of the test; anything left is killed at the end."""
    yield tmp_path
    stray = sweep(str(tmp_path), grace=0)
    assert not stray, f"processes left behind (killed): {stray}"


@pytest.mark.parametrize("death", ["sigkill", "exit"])
def test_a_guarded_command_and_its_grandchildren_die_with_their_parent(probe, death):
    log = probe / "parent.log"
    go = probe / "go"
    parent = Daemon("parent", [sys.executable, "-c", PARENT.format(root=str(ROOT)), death, str(go)], log,
                    env=child_env(DECA_ORPHAN_PROBE=str(probe)))
    try:
        info = wait_for(lambda: json_line(log), 30, "the parent's command", [parent])
        marked = leftovers(str(probe))  # parent, watchdog, bash, two sleeps (one in a session of its own)
        assert info["leader"] in marked and info["watchdog"] in marked and len(marked) >= 5, describe(marked)
        if death == "sigkill":
            sigkill(parent)
        go.touch()
        parent.proc.wait(timeout=30)
        assert_all_gone(probe, f"after the parent's {death}")
    finally:
        parent.stop(grace=1)


def test_a_command_spawned_from_a_thread_outlives_the_thread_and_stops_cleanly(tmp_path):
    started = []
    thread = threading.Thread(target=lambda: started.append(spawn(["sleep", "600"])))
    thread.start()
    thread.join()
    cmd = started[0]
    try:
        time.sleep(1.5)  # PR_SET_PDEATHSIG would have fired when the thread ended; the watchdog does not
        assert cmd.proc.poll() is None and cmd.watchdog.proc.poll() is None
        assert cmd.pids() == [cmd.proc.pid]
    finally:
        status = cmd.stop(grace=5)
    assert status == -signal.SIGTERM and cmd.watchdog.proc.poll() == 0  # released
    assert not cmd.pids()


def run_inner(probe: Path, test: str, **env: str) -> Daemon:
    """`pytest tests/infra/orphan_target.py::TEST` with DECA_ORPHAN_PROBE=probe (and `env`), in its own session."""
    argv = [str(VENV_BIN / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
            f"--basetemp={probe / 'inner-tmp'}", f"tests/infra/orphan_target.py::{test}"]
    return Daemon(f"inner pytest {test}", argv, probe / "pytest.log", cwd=ROOT,
                  env=child_env(DECA_ORPHAN_PROBE=str(probe), **env))


def when_ready(inner: Daemon, probe: Path, timeout: float, also=lambda info: True) -> dict:
    """The inner test's ready.json, once it exists and `also(info)` holds."""
    def check():
        path = probe / "ready.json"
        info = json.loads(path.read_text()) if path.exists() else None
        return info if info and also(info) else None

    info = wait_for(check, timeout, "the inner test", [inner])
    assert info["pytest_pid"] == inner.proc.pid
    return info


def sigkill(daemon: Daemon) -> None:
    """SIGKILL the daemon's own process alone (not its group, not its children) and reap it."""
    os.kill(daemon.proc.pid, signal.SIGKILL)
    daemon.proc.wait(timeout=30)


def test_a_killed_test_run_leaves_no_plain_children(probe):
    inner = run_inner(probe, "test_hold_plain_children")
    try:
        info = when_ready(inner, probe, 120)
        assert set(info["children"]) <= set(leftovers(str(probe)))
        sigkill(inner)
        assert_all_gone(probe, "after SIGKILL of the test run (session guard)")
    finally:
        inner.stop(grace=1)


@pytest.mark.fault("fault", "SIGKILL of a training driver leaves no local Ray", "earlier")
@pytest.mark.slow
def test_a_killed_driver_leaves_no_local_ray(probe):
    """train.ray_session.start_ray without RAY_ADDRESS starts a local Ray (GCS, raylet, agents, workers). Ray's own
    fate sharing (PR_SET_PDEATHSIG on its daemons) once left its dashboard and runtime-env agents running for
    more than 30 s: the driver's watchdog (train.ray_session.guard_local_processes) ends them too."""
    log = probe / "driver.log"
    driver = Daemon("ray driver", [sys.executable, "-c", RAY_DRIVER.format(root=str(ROOT))], log,
                    env=child_env(DECA_ORPHAN_PROBE=str(probe)))
    try:
        info = wait_for(lambda: json_line(log), 180, "the Ray driver", [driver])
        running = leftovers(str(probe))  # the driver, gcs_server, raylet, dashboard, monitors, workers
        assert set(info["workers"]) <= set(running) and len(running) >= 5, describe(running)
        sigkill(driver)
        assert_all_gone(probe, "after SIGKILL of the Ray driver")
    except BaseException:
        print(driver.tail(6000))
        raise
    finally:
        driver.stop(grace=1)


@pytest.mark.fault("fault", "SIGKILL of a pytest run holding the MLflow server leaves no process", "issue 24: orphans")
@pytest.mark.slow
@pytest.mark.parametrize("session_guard", ["1", "0"], ids=["session-and-fixture-guards", "fixture-guard-alone"])
def test_a_killed_test_run_leaves_no_mlflow_server(probe, session_guard):
    inner = run_inner(probe, "test_hold_the_mlflow_server",
                      DECA_TEST_NO_SESSION_GUARD="0" if session_guard == "1" else "1")
    try:
        info = when_ready(inner, probe, 180, also=lambda i: answers(f"{i['url']}/health"))
        running = leftovers(str(probe))  # pytest, `mlflow server` (server.sh exec'd it), uvicorn, watchdog(s)
        assert info["server_pid"] in running and len(running) >= 3, describe(running)
        sigkill(inner)
        assert_all_gone(probe, "after SIGKILL of the test run holding the MLflow server")
        assert not answers(f"{info['url']}/health", timeout=2)
    except BaseException:
        print(inner.tail(6000))
        raise
    finally:
        inner.stop(grace=1)


@pytest.mark.fault("fault", "a training that fails under setsid exits 1, not 143", "issue 34: leftovers")
def test_a_session_leader_that_guards_its_own_session_keeps_its_exit_status(tmp_path):
    """`setsid deca train` that fails: the watchdog sees its pipe close while the leader is still exiting and
    must not SIGTERM the leader (exit 143); it ends the rest of the session once the leader is gone."""
    import subprocess

    script = tmp_path / "leader.py"
    script.write_text(
        "import os, subprocess, sys, time\n"
        "from deca.processes import guard_self\n"
        "dog = guard_self(grace=1)\n"
        "dog.watch(os.getpid())\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        "open(sys.argv[1], 'w').write(str(child.pid))\n"
        "dog.proc.stdin.close()  # as the interpreter does while it finishes\n"
        "time.sleep(1.5)\n"
        "sys.exit(1)\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pid_file = tmp_path / "child.pid"
    done = subprocess.run([sys.executable, str(script), str(pid_file)], env=env, start_new_session=True,
                          timeout=60)
    assert done.returncode == 1
    child = int(pid_file.read_text())
    wait_for(lambda: not Path(f"/proc/{child}").exists(), 15, "the leader's child ended by the watchdog")
