"""Servers that a test starts and must stop: free loopback ports, daemons in their own process group, waits
with a deadline, and a last sweep for anything left behind.

Every daemon runs in a new session (its own process group) with its output in a log file, so that the test
can kill it with everything it spawned (``os.killpg``) and show the log's tail when something goes wrong; a
watchdog (deca/processes.py) ends it too when the test run itself dies without its teardown (SIGKILL).
`leftovers` finds processes whose command line or environment names a test's own scratch folder (Ray's
temp dir, the params file): it never matches another test's or another user's processes.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable, Sequence

from deca.processes import spawn
from tests.conftest import ROOT

VENV_BIN = ROOT / ".venv" / "bin"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nothing listens on right now."""
    return free_ports(1, host)[0]


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """`n` different TCP ports nothing listens on right now (each held until all are picked: `free_port` called
    twice can return the same port, and a Ray node given one port for two components refuses to start)."""
    with contextlib.ExitStack() as held:
        sockets = [held.enter_context(socket.socket()) for _ in range(n)]
        for s in sockets:
            s.bind((host, 0))
        return [s.getsockname()[1] for s in sockets]


def child_env(**extra: str) -> dict[str, str]:
    """The environment of a child: the project's venv first on PATH, Ray quiet, plus `extra`."""
    env = {**os.environ, "PATH": f"{VENV_BIN}:{os.environ.get('PATH', '/usr/bin:/bin')}",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0",
           "PYTHONHASHSEED": "0", "DVC_NO_ANALYTICS": "1"}
    env.pop("RAY_ADDRESS", None)
    env.update(extra)
    return env


class Daemon:
    """A long-running command in its own session, its output in `log`, guarded by `deca.processes.spawn`: a
    watchdog ends it and everything it started if this process dies without stopping it (SIGKILL)."""

    def __init__(self, name: str, argv: Sequence[str], log: Path, env: dict[str, str] | None = None,
                 cwd: Path | None = None):
        self.name, self.log = name, Path(log)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.guarded = spawn(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT)
        self.proc = self.guarded.proc

    def alive(self) -> bool:
        return self.proc.poll() is None

    def tail(self, chars: int = 3000) -> str:
        try:
            return f"--- {self.name} ({self.log}) ---\n" + self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return f"--- {self.name}: no log ---"

    def kill(self) -> None:
        """SIGKILL every process of the daemon at once (a machine that dies): its session, including children
        that moved to process groups of their own (Ray's workers do), and whatever carries its guard's token."""
        self.guarded.kill()

    def terminate(self) -> None:
        """SIGTERM the process group (without waiting: `stop` waits)."""
        if self.proc.poll() is None:
            self.guarded.signal(signal.SIGTERM)

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM the process group, SIGKILL what is left of the daemon after `grace` seconds."""
        self.guarded.stop(grace)


def wait_for(check: Callable[[], Any], timeout: float, what: str, daemons: Sequence[Daemon] = (),
             every: float = 0.5) -> Any:
    """Poll `check` until it returns something truthy; fail after `timeout` s (or when a daemon died) with
    `what` and the daemons' log tails."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        dead = [d for d in daemons if not d.alive()]
        if dead or time.monotonic() > deadline:
            why = f"{', '.join(d.name for d in dead)} exited" if dead else f"not within {timeout:g} s"
            raise AssertionError(f"{what}: {why}\n" + "\n".join(d.tail() for d in daemons))
        time.sleep(every)


def get_json(url: str, timeout: float = 5.0) -> Any:
    """GET `url` as JSON; None when nothing answers (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return json.loads(resp.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def answers(url: str, timeout: float = 5.0) -> bool:
    """Whether GET `url` returns 200."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status == 200
    except (OSError, urllib.error.URLError):
        return False


def leftovers(marker: str) -> list[int]:
    """Pids of live processes whose command line or environment contains `marker` (a test's unique scratch
    path; give it to a daemon in an environment variable to find the processes it spawns that rename
    themselves, such as Ray's workers)."""
    found, needle = [], marker.encode()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            named = needle in (entry / "cmdline").read_bytes() or needle in (entry / "environ").read_bytes()
            state = next((line for line in (entry / "status").read_text().splitlines() if line.startswith("State:")), "")
        except OSError:
            continue
        if named and "zombie" not in state:
            found.append(int(entry.name))
    return found


def sweep(marker: str, grace: float = 10.0) -> list[int]:
    """SIGKILL, one pid at a time, what `leftovers(marker)` still finds after `grace` s; returns those pids."""
    deadline = time.monotonic() + grace
    while leftovers(marker) and time.monotonic() < deadline:
        time.sleep(0.5)
    stray = leftovers(marker)
    for pid in stray:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return stray
