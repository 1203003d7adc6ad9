"""Child processes that die with their parent, even when the parent is killed with SIGKILL.

The problem: a server started by a Python process (a test fixture's `mlflow server`, a Ray node) and its own
children (MLflow's uvicorn workers, Ray's raylet and workers) outlive a parent that dies without running its
cleanup (SIGKILL, OOM killer, a CI timeout): they are re-parented to PID 1 and keep their ports and files.

Why not PR_SET_PDEATHSIG alone: it fires when the *thread* that forked the child exits (a server started from
a short-lived thread would die early), and it is a property of one process: the server's own children do not
have it. Why not a process group alone: `os.killpg` needs someone alive to call it.

The mechanism (Linux /proc, POSIX signals):

* `spawn` starts the command as the leader of a new session (its own process group), so that one signal
  reaches it and what it forks, and marks its environment with a unique token in DECA_PROCESS_GUARD (appended
  to any token already there); every descendant inherits it, even one that moves to a session of its own.
* Before the command, it starts a watchdog: a small Python process (this file run as a script, standard
  library only), itself in a new session so that signals sent to the parent's process group (Ctrl-C, a
  `killpg` of a test run) do not take it down. It holds the read end of a pipe whose write end only the
  parent holds; end-of-file on it, or its parent pid changing (polled: a `fork` of the parent could keep the
  pipe open), means the parent is gone, whichever way it went. The watchdog then sends SIGTERM to the
  command's session and to every process that carries the token, SIGKILL to what is left after a grace
  period, and exits. A normal stop (`Guarded.stop`) releases the watchdog first.
* `guard_self` does the same for the calling process as a whole, with no command: every child it starts
  afterwards with the inherited environment carries the token, and is ended when the caller is gone (the
  test session uses it as a catch-all for the processes tests start with plain `subprocess`).

A process that clears its environment and leaves the session escapes; none of the servers used here does.
"""
from __future__ import annotations

import os
import secrets
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterable, Sequence

MARKER_ENV = "DECA_PROCESS_GUARD"
POLL_S = 0.5  # how often the watchdog looks at its parent pid when the pipe says nothing
SETTLE_S = 1.0  # the watchdog stops after finding nothing for this long (a fork racing the parent's death)


def session_members(sid: int) -> list[int]:
    """Pids of the live (non-zombie) processes of session `sid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry.name))
    return found


def marked(token: str) -> list[int]:
    """Pids of the live processes (other than this one) whose environment contains `token`."""
    found, needle, me = [], token.encode(), os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def targets(sessions: Iterable[int], token: str) -> list[int]:
    """What a guard ends: the members of `sessions` and the processes marked with `token` (not this one)."""
    pids = set(marked(token))
    for sid in sessions:
        pids.update(session_members(sid))
    pids.discard(os.getpid())
    return sorted(pids)


def signal_all(pids: Iterable[int], sig: int) -> None:
    """Send `sig` to each pid, ignoring the ones already gone (or not ours)."""
    for pid in pids:
        try:
            os.kill(pid, sig)
        except (ProcessLookupError, PermissionError):
            pass


def reap(sessions: Sequence[int], token: str, grace: float) -> list[int]:
    """SIGTERM everything `targets` finds, SIGKILL what is left after `grace` s, and go on until nothing new
    shows up for SETTLE_S s; returns the pids it signalled."""
    hit = targets(sessions, token)
    signal_all(hit, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while targets(sessions, token) and time.monotonic() < deadline:
        time.sleep(0.1)
    quiet_since = time.monotonic()
    while time.monotonic() - quiet_since < SETTLE_S:
        left = targets(sessions, token)
        if left:
            signal_all(left, signal.SIGKILL)
            hit.extend(p for p in left if p not in hit)
            quiet_since = time.monotonic()
        time.sleep(0.1)
    return hit


def wait_until_gone(parent: int, limit: float = 30.0) -> None:
    """Wait (up to `limit` s) until `parent` is no longer this process's parent. The pipe closes while the
    parent is still finishing (its interpreter closes files at exit); reaping then would SIGTERM the parent
    itself when it leads the watched session (`setsid deca train`: exit 143 instead of its own status)."""
    deadline = time.monotonic() + limit
    while os.getppid() == parent and time.monotonic() < deadline:
        time.sleep(0.05)


def watch(parent: int, token: str, grace: float) -> int:
    """The watchdog's loop: read "<sid>" lines (sessions to end) and "release" from stdin until the parent
    is gone, then `reap`. Returns the exit status (0)."""
    sessions: list[int] = []
    pending = b""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_IGN)
    while os.getppid() == parent:
        ready, _, _ = select.select([0], [], [], POLL_S)
        if not ready:
            continue
        chunk = os.read(0, 4096)
        if not chunk:
            wait_until_gone(parent)  # end of file: the parent closed its write end, exiting (or gone)
            break
        *lines, pending = (pending + chunk).split(b"\n")
        for line in lines:
            if line.strip() == b"release":
                return 0
            if line.strip():
                sessions.append(int(line))
    reap(sessions, token, grace)
    return 0


class Watchdog:
    """A running watchdog (see the module's docstring): `token` is what it looks for in environments."""

    def __init__(self, token: str, grace: float = 5.0):
        self.token = token
        argv = [sys.executable, "-I", "-S", str(Path(__file__).resolve()), str(os.getpid()), token, str(grace)]
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)

    def watch(self, sid: int) -> None:
        """Also end session `sid` (a command started with start_new_session) when the parent is gone."""
        self._send(f"{sid}\n")

    def release(self) -> None:
        """Let the watchdog exit without ending anything (the caller stopped its processes itself)."""
        self._send("release\n")
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):  # the watchdog is gone or released
            pass


def new_token() -> str:
    """A token no other guard uses."""
    return f"deca-guard-{os.getpid()}-{secrets.token_hex(8)}"


def marked_env(env: dict[str, str] | None, token: str) -> dict[str, str]:
    """`env` (default: this process's) with `token` appended to MARKER_ENV."""
    env = dict(os.environ if env is None else env)
    env[MARKER_ENV] = ",".join(filter(None, [env.get(MARKER_ENV, ""), token]))
    return env


class Guarded:
    """A command started by `spawn`: `proc` leads its own session; it dies with this process."""

    def __init__(self, proc: subprocess.Popen, watchdog: Watchdog):
        self.proc, self.watchdog = proc, watchdog

    @property
    def token(self) -> str:
        return self.watchdog.token

    def pids(self) -> list[int]:
        """The live processes of the command: its session, and those that carry its token elsewhere."""
        return [p for p in targets([self.proc.pid], self.token) if p != self.watchdog.proc.pid]

    def signal(self, sig: int) -> None:
        """Send `sig` to the command's process group (not to members that moved to a group of their own)."""
        try:
            os.killpg(self.proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def kill(self) -> None:
        """SIGKILL every process of the command at once, wait for its leader, release the watchdog."""
        signal_all(self.pids(), signal.SIGKILL)
        self.proc.wait()
        self.watchdog.release()

    def stop(self, grace: float = 20.0) -> int | None:
        """SIGTERM the process group, then after up to `grace` s SIGKILL whatever of the command is left;
        returns the leader's exit status."""
        if self.proc.poll() is None:
            self.signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        deadline = time.monotonic() + min(grace, 5.0)
        while self.pids() and time.monotonic() < deadline:  # children that outlived their leader
            time.sleep(0.1)
        self.kill()
        return self.proc.returncode


def spawn(argv: Sequence[str], *, env: dict[str, str] | None = None, grace: float = 5.0,
          **popen_kwargs) -> Guarded:
    """Start `argv` (`subprocess.Popen` keywords allowed, not start_new_session/process_group) in a session
    of its own, guarded by a watchdog that ends it `grace` s after SIGTERM once this process is gone."""
    token = new_token()
    watchdog = Watchdog(token, grace)  # in this process's environment: it is not part of the command
    try:
        proc = subprocess.Popen(list(argv), env=marked_env(env, token), start_new_session=True, **popen_kwargs)
    except BaseException:
        watchdog.release()
        raise
    watchdog.watch(proc.pid)
    return Guarded(proc, watchdog)


def guard_self(grace: float = 5.0) -> Watchdog:
    """Mark this process's environment with a new token and start a watchdog that ends every process carrying
    it once this process is gone: all the children started afterwards with the inherited environment."""
    token = new_token()
    watchdog = Watchdog(token, grace)
    os.environ[MARKER_ENV] = marked_env(None, token)[MARKER_ENV]
    return watchdog


def main(argv: Sequence[str]) -> int:
    """`python processes.py PARENT_PID TOKEN GRACE`: the watchdog (started by `Watchdog`)."""
    parent, token, grace = int(argv[0]), argv[1], float(argv[2])
    return watch(parent, token, grace)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
