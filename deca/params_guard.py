"""The params a DVC run began with: a stage refuses to start, or to finish, on a params.yaml that changed since.

DVC runs each stage's command as a child process in the workspace, and each reads params.yaml afresh. A second
`dvc exp run` in the same workspace writes its `-S` values into params.yaml while the first one runs: the
first's later stages then ran on the second's values, and DVC recorded their results under them (issue 42).

So every deca command that DVC runs (DVC sets DVC_STAGE for a stage's command) looks up the DVC process that
runs it: the nearest ancestor started without this DVC_STAGE (Linux /proc; elsewhere nothing is checked). The
first of that process's stages records the sha256 of the params file it reads, in
``$DVC_ROOT/.dvc/tmp/params-digest/<pid>-<start time>.json``; every later one compares, before it runs and once
more after, and refuses with one line when the bytes differ. A record whose process is gone is removed when the
next one is written. Outside DVC (`deca train` by hand) nothing is checked.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from deca.errors import ConfigError
from deca.io import file_sha256, write_json

RECORDS = Path(".dvc") / "tmp" / "params-digest"


def digest(path: Path) -> str:
    """sha256 of the file's bytes ("missing" when there is none: a params file may be absent)."""
    try:
        return file_sha256(path)
    except FileNotFoundError:
        return "missing"


def _stat(pid: int) -> tuple[int, str] | None:
    """(parent pid, start time in clock ticks) of a live process, from /proc; None when there is no such one."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid ... starttime is the 20th
    return int(fields[1]), fields[19]


def dvc_process(stage: str) -> str | None:
    """``<pid>-<start time>`` of the nearest ancestor whose environment lacks ``DVC_STAGE=<stage>``: the DVC
    process that runs this stage (a shell between them has DVC_STAGE too); None when /proc does not say."""
    entry = f"DVC_STAGE={stage}".encode()
    pid = os.getppid()
    while pid > 1:
        stat = _stat(pid)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            return None
        if stat is None:
            return None
        if entry not in environ:
            return f"{pid}-{stat[1]}"
        pid = stat[0]
    return None


def _alive(key: str) -> bool:
    pid, _, start = key.partition("-")
    stat = _stat(int(pid)) if pid.isdigit() else None
    return stat is not None and stat[1] == start


def recorded(key: str, path: Path, now: str) -> str:
    """The digest this DVC process recorded for `path`, recording `now` when it is the first to ask."""
    folder = Path(os.environ.get("DVC_ROOT") or ".") / RECORDS
    record = folder / f"{key}.json"
    try:
        seen = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # none yet (written whole, so never half)
        seen = {}
    if str(path) not in seen:
        for old in folder.glob("*.json") if folder.is_dir() else []:
            if not _alive(old.stem):
                old.unlink(missing_ok=True)
        seen[str(path)] = now
        write_json(record, seen)
    return seen[str(path)]


def refusal(params: str | Path, stage: str, when: str) -> str:
    return (f"{params}: changed {when} (another `dvc exp run`, or an edit, wrote it); stage {stage} refused, so "
            "that its results are not recorded under params it did not run with. Run experiments side by side "
            "through the queue (`dvc exp run --queue`, then `dvc exp run --run-all`), or this one again alone")


def begin(params: str | Path) -> Callable[[], None]:
    """At the start of a deca command: ConfigError when DVC runs it as a stage and the params file differs from
    the one this DVC run's first stage read. Returns the check to make at its end (a no-op outside DVC)."""
    stage = os.environ.get("DVC_STAGE")
    key = dvc_process(stage) if stage else None
    if key is None:
        return lambda: None
    path = Path(params).resolve()
    now = digest(path)
    first = recorded(key, path, now)
    if now != first:
        raise ConfigError(refusal(params, stage, "since this DVC run's first stage read it"))

    def end() -> None:
        if digest(path) != first:
            raise ConfigError(refusal(params, stage, "while this stage ran"))
    return end
