"""A Dask cluster of separate processes on loopback for the DaskRunner tests, and a slow task to kill a
worker in the middle of.

`LoopbackCluster` runs ``dask scheduler`` and ``dask worker`` as subprocesses (each in its own session,
so that killing one kills its nanny and its worker process together), all on 127.0.0.1; `stop` kills
whatever is left. The workers import the task readers of the tests, so they run with the repository on
PYTHONPATH. The slow task (`SLOW`) sleeps before each example: a job over it lasts long enough to lose a
worker while shards are being written.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deca import registry
from deca.registry import Example, Source, Task

REPO = Path(__file__).resolve().parents[2]
DASK = Path(sys.executable).parent / "dask"
SLOW = "slow.dask"


@dataclass(frozen=True)
class SlowOptions:
    delay: float = 0.02  # seconds before each example


def slow_read(split: str, files: Sequence[Path], options: SlowOptions) -> Iterator[Example]:
    (path,) = files
    with open(path, encoding="utf-8") as f:
        for line in f:
            time.sleep(options.delay)
            ident, text = line.rstrip("\n").split("\t")
            yield Example(id=ident, context=text, question="What is the first word?", answer=text.split()[0])


SLOW_TASK = Task(name=SLOW, description="slow fake task for the DaskRunner tests", metric="em",
                 sources=(Source(path="slow/train.tsv", url=None),), splits={"train": ("slow/train.tsv",)},
                 read=slow_read, options=SlowOptions, group="test")


def write_slow_corpus(root: Path, n: int) -> Path:
    """`n` examples of the slow task under ``root/slow``; returns `root`."""
    (root / "slow").mkdir(parents=True, exist_ok=True)
    lines = [f"s{i}\tword{i % 7} number {i} of the slow corpus\n" for i in range(n)]
    (root / "slow" / "train.tsv").write_text("".join(lines), encoding="utf-8")
    return root


def register_slow(monkeypatch) -> Task:
    registry.all_tasks()
    monkeypatch.setitem(registry._REGISTRY, SLOW, SLOW_TASK)
    return SLOW_TASK


class LoopbackCluster:
    """``dask scheduler`` + ``dask worker`` processes on 127.0.0.1 (any free ports, no dashboards)."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.scheduler_file = workdir / "scheduler.json"
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
                    "DASK_LOGGING__DISTRIBUTED": "warning"}
        self.procs: dict[str, subprocess.Popen] = {}
        self.started = 0  # workers started so far (names worker1, worker2, ...)

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = open(self.workdir / f"{name}.log", "wb")  # noqa: SIM115  (closed with the process)
        proc = subprocess.Popen([str(DASK), *args], cwd=self.workdir, env=self.env, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        self.procs[name] = proc
        return proc

    def start(self, workers: int) -> "LoopbackCluster":
        self._spawn("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                  "--scheduler-file", str(self.scheduler_file)])
        self._wait(lambda: self.scheduler_file.exists(), "the scheduler file")
        for _ in range(workers):
            self.start_worker()
        self.wait_for_workers(workers)
        return self

    @property
    def address(self) -> str:
        return json.loads(self.scheduler_file.read_text())["address"]

    def start_worker(self) -> str:
        self.started += 1
        name = f"worker{self.started}"
        self._spawn(name, ["worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1",
                           "--nworkers", "1", "--nthreads", "1", "--no-dashboard",
                           "--local-directory", str(self.workdir / name)])
        return name

    def workers(self) -> int:
        from distributed import Client

        with Client(self.address, timeout=10, set_as_default=False) as client:
            return len(client.nthreads())

    def running(self, prefix: str) -> list[str]:
        """The workers (names) that are running a task whose key starts with `prefix` (e.g. "run_bundle":
        a DoFn over a partition)."""
        import psutil
        from distributed import Client

        from pipelines.dask_runner import executing

        with Client(self.address, timeout=10, set_as_default=False) as client:
            pids = client.run(os.getpid)
            keys = client.run(executing)
        busy = {pids[addr] for addr, running in keys.items()
                if any(str(k[0] if isinstance(k, tuple) else k).startswith(prefix) for k in running)}
        return [name for name, proc in self.procs.items()
                if busy & {c.pid for c in psutil.Process(proc.pid).children(recursive=True)}]

    def wait_for_workers(self, n: int) -> None:
        self._wait(lambda: self.workers() == n, f"{n} worker(s)")

    def _wait(self, ready, what: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Dask cluster: no {what} after {timeout:g} s (logs in {self.workdir})")
            time.sleep(0.2)

    def kill(self, name: str) -> None:
        """SIGKILL a process and everything in its session (a worker: its nanny and the worker process)."""
        proc = self.procs.pop(name)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)

    def stop(self) -> None:
        for name in [n for n in self.procs if n != "scheduler"] + ["scheduler"]:
            if name in self.procs:
                self.kill(name)
