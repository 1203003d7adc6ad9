"""One stage's commands run as `dvc repro` runs them, in a child process of `deca repro --jobs N` (infra/jobs.py):
the shell, working directory and environment DVC gives them (`dvc.stage.run`: `DVC_ROOT`, `DVC_STAGE`), one command
after the other, stopping at the first that fails; their output goes to the stage's log file.

Each command runs in a session of its own that dies with this process, even when it is killed with SIGKILL
(deca/processes.py), so that Ctrl-C or a failure elsewhere can stop a stage and all it started (Ray's workers too).
"""
from __future__ import annotations

import math
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from dvc.stage.run import _enforce_cmd_list, _make_cmd, get_executable, prepare_kwargs

from deca.processes import Guarded, spawn

LOG_DIR = Path(".dvc/tmp/repro")
POLL_S = 0.2  # how often the scheduler looks for a stop signal while it waits for stages
STOP_GRACE_S = 30.0  # how long a stage has, after Ctrl-C is passed on to it, before it is killed


def stage_cores(stage: Any, jobs: int) -> int:
    """The cores `stage` keeps busy, at most `jobs`: its dvc.yaml `meta: {cores: N}`, or a list of numbers whose
    product it is, where a string names a key of the project's params.yaml (`[train.num_workers,
    train.cpus_per_worker]`: DVC cannot interpolate an elastic `[min, max]`, which counts as its max); 1 when it
    declares none."""
    declared = stage.meta.get("cores", 1) if isinstance(stage.meta, dict) else 1
    numbers = declared if isinstance(declared, list) else [declared]
    try:
        values = [param_value(stage, n) if isinstance(n, str) else n for n in numbers]
        cores = math.ceil(math.prod(float(max(v) if isinstance(v, list) and v else v) for v in values))
    except (TypeError, ValueError, KeyError):
        raise ValueError(f"dvc.yaml: stage {stage.addressing}: meta.cores must be a number, a params.yaml key or a "
                         f"list of those, not {declared!r}") from None
    return min(max(cores, 1), jobs)


def param_value(stage: Any, key: str) -> Any:
    """The value of dotted `key` in the params.yaml of `stage`'s project (KeyError when it has none)."""
    path = Path(stage.repo.root_dir) / "params.yaml"
    node = yaml.safe_load(path.read_text(encoding="utf-8")) if path.is_file() else {}
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


def stage_log(log_dir: Path, name: str) -> Path:
    """Where the output of stage `name`'s commands goes (`prepare@sst` -> LOG_DIR/prepare@sst.log)."""
    return log_dir / (name.replace("/", "_").replace(":", "_") + ".log")


@dataclass
class Job:
    """A stage whose commands are running (`run_commands`, in a thread of the scheduler's pool)."""

    stage: Any
    cores: int
    log: Path
    started: float = field(default_factory=time.monotonic)
    current: Guarded | None = None
    stopping: bool = False

    def signal(self, sig: int) -> None:
        """Send `sig` to the running command's process group; no later command of the stage starts."""
        self.stopping = True
        if self.current is not None:
            self.current.signal(sig)

    def stop(self, grace: float) -> None:
        """SIGTERM what is left of the running command, SIGKILL after `grace` s."""
        self.stopping = True
        if self.current is not None:
            self.current.stop(grace=grace)

    def seconds(self) -> float:
        return time.monotonic() - self.started


def run_commands(job: Job, on_line: Callable[[str], None]) -> int:
    """Run the stage's commands (dvc.stage.run.cmd_run), their output to `job.log` and, line by line, to `on_line`;
    the first non-zero exit status (negative: killed by that signal), else 0."""

    kwargs = prepare_kwargs(job.stage)
    env, cwd = kwargs["env"], kwargs["cwd"]
    job.log.parent.mkdir(parents=True, exist_ok=True)
    with open(job.log, "w", encoding="utf-8", errors="replace") as log:
        for cmd in _enforce_cmd_list(job.stage.cmd):
            if job.stopping:
                return -signal.SIGTERM
            log.write(f"> {cmd}\n")
            log.flush()
            job.current = spawn(_make_cmd(get_executable(), cmd), env=env, cwd=cwd, close_fds=True,
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", bufsize=1)
            for text in job.current.proc.stdout:
                log.write(text)
                on_line(text)
            code = job.current.proc.wait()
            job.current.stop(grace=5.0)  # whatever the command left behind, and its watchdog
            if code != 0:
                return code
    return 0


def tail(path: Path, lines: int) -> str:
    """The last `lines` lines of a log file ('' when there is none)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "".join(text.splitlines(keepends=True)[-lines:])
