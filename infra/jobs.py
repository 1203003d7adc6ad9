"""`deca repro --jobs N`: the stages of `dvc repro` run up to N at a time, each recorded by DVC as `dvc repro`
records it (dvc.lock, the cache, the run-cache).

`dvc repro` runs one stage at a time (treeverse/dvc#755), and a second `dvc repro` in the same workspace fails on
DVC's locks (#10465). Here one process holds the repository lock for the whole run and takes each stage through
the steps of DVC's own `Stage.reproduce`/`Stage.run`, with DVC's API, in the main thread; only the stages'
commands, the part that takes time, run at once, as child processes (infra/jobs_run.py).

- The graph and the plan are DVC's (`repo.index.graph`, `dvc.repo.reproduce.plan_repro`): a stage is ready once
  every stage it depends on is done; ready stages start in the order `dvc repro` would run them.
- A ready stage that did not change is skipped (`stage.changed`). One that changed has its outputs removed
  (`persist` ones kept) and is checked out of the run-cache where DVC has its run; else its commands run.
- When they succeed, DVC saves it as `Stage.run` does: `stage.save` (hashes; the run-cache entry unless an output
  is uncached), `stage.commit` (the cache), `stage.dump` (its entry of dvc.lock).
- A stage that fails or is killed is not recorded: what its commands wrote is removed and the outputs of its last
  recorded run are checked out of the cache where it has them, so no output is left half-written (`persist`
  outputs, such as the training run that `deca train --auto-resume` continues, are kept, as `dvc repro` keeps
  them). The stages that depend on it do not run; the others go on and are recorded; `dvc status` names the rest.
- A stage takes one core, or what its `meta: {cores: ...}` in dvc.yaml says; stages start while their cores fit
  in N, and one that needs N or more runs alone.
- While it runs, other DVC commands in the workspace wait for or refuse the lock, as they do during `dvc repro`'s
  bookkeeping (between `dvc repro`'s stages the lock is released while a command runs; here it is held).
"""
from __future__ import annotations

import logging
import signal
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dvc.dvcfile import PROJECT_FILE
from dvc.exceptions import DvcException
from dvc.stage.cache import RunCacheNotFoundError

from infra.jobs_run import Job, POLL_S, STOP_GRACE_S, run_commands, stage_cores, stage_log


class StopSignal:
    """The handler of SIGINT and SIGTERM while the stages run: the first one is noted, and the scheduler stops the
    stages between two of DVC's steps (a signal that raised inside DVC's writing of its files would leave them
    corrupt); a second one interrupts at once."""

    def __init__(self):
        self.signal = 0

    def __call__(self, signum: int, _frame: Any) -> None:
        if self.signal:
            raise KeyboardInterrupt
        self.signal = signum


@dataclass
class Outcome:
    """What became of each stage of the plan (by its address)."""

    ran: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # from the run-cache
    failed: dict[str, str] = field(default_factory=dict)  # stage -> why (with its log)
    not_run: dict[str, str] = field(default_factory=dict)  # stage -> the failed stage it depends on
    interrupted: int = 0  # the signal that stopped the run (SIGINT: Ctrl-C), if one did


def plan(repo: Any, targets: list[str]) -> tuple[Any, list[Any]]:
    """(DVC's active graph, the stages `dvc repro TARGETS` would take, in its order)."""
    from dvc.repo.reproduce import collect_stages, get_active_graph, plan_repro

    graph = get_active_graph(repo.index.graph)
    stages = collect_stages(repo, targets or [PROJECT_FILE])
    return graph, plan_repro(graph, stages)


def upstream(graph: Any, stage: Any) -> list[Any]:
    """The stages `stage` depends on (DVC's graph points from a stage to those)."""
    return list(graph.successors(stage))


def record(stage: Any) -> None:
    """Save, commit and dump a stage whose outputs are in place, as `Stage.run` and `dvc repro` do."""
    no_cache_outs = any(not out.use_cache for out in stage.outs if not (out.is_metric or out.is_plot))
    stage.save(allow_missing=False, run_cache=not no_cache_outs)
    stage.commit(allow_missing=False)
    stage.dump(update_pipeline=False)


def discard(stage: Any) -> list[str]:
    """Remove what a failed stage's commands wrote (not its `persist` outputs) and check out of the cache the
    outputs dvc.lock records for it; the outputs put back."""
    for out in stage.outs:
        if not out.persist:
            out.remove(ignore_remove=False)

    back = []
    for out in stage.outs:
        if not out.persist and out.use_cache and out.hash_info:
            try:
                out.checkout(allow_missing=False)
                back.append(str(out))
            except (DvcException, OSError):  # not in the cache (a fresh clone): it stays removed
                pass
    return back


def prepare_stage(repo: Any, graph: Any, stage: Any) -> str:
    """Bring a ready stage as far as its commands (main thread, the repository locked): 'unchanged',
    'restored' (from the run-cache, recorded), 'done' (not a command stage: DVC reproduced it), or 'run'."""

    ups = upstream(graph, stage)
    if not stage.cmd or stage.frozen or stage.is_import:  # nothing to run at once: DVC's own step, as is
        if stage.reproduce(upstream=ups) is None:
            return "unchanged"
        stage.dump(update_pipeline=False)
        return "done"
    if not stage.changed(upstream=ups):
        return "unchanged"
    stage.remove_outs(ignore_remove=False, force=False)
    try:
        repo.stage_cache.restore(stage)
    except RunCacheNotFoundError:
        stage.save_deps()
        return "run"
    record(stage)
    return "restored"


class Scheduler:
    """Runs the plan's stages up to `jobs` cores at a time (module docstring); `report(event, stage, detail)`
    hears of each stage's start and end."""

    def __init__(self, repo: Any, graph: Any, steps: list[Any], jobs: int, log_dir: Path,
                 report: Callable[[str, Any, str], None], on_line: Callable[[str], None]):
        self.repo, self.graph, self.jobs, self.log_dir = repo, graph, jobs, log_dir
        self.pending = list(steps)
        self.in_plan = set(steps)
        self.report, self.on_line = report, on_line
        self.done: set[Any] = set()
        self.running: dict[Future, Job] = {}
        self.outcome = Outcome()

    def busy(self) -> int:
        return sum(job.cores for job in self.running.values())

    def blocker(self, stage: Any) -> Any | None:
        """The failed (or not run) stage of the plan that `stage` depends on, if any."""
        for up in upstream(self.graph, stage):
            if up in self.in_plan and (up.addressing in self.outcome.failed or up.addressing in self.outcome.not_run):
                return up
        return None

    def ready(self, stage: Any) -> bool:
        return all(up in self.done or up not in self.in_plan for up in upstream(self.graph, stage))

    def start_ready(self, pool: ThreadPoolExecutor) -> None:
        """Start (or settle without running) the pending stages that are ready, in the plan's order, until one
        does not fit beside those running (it waits for them: a stage that needs every core is not starved)."""
        for stage in list(self.pending):
            if (up := self.blocker(stage)) is not None:
                self.pending.remove(stage)
                failed = up.addressing if up.addressing in self.outcome.failed else self.outcome.not_run[up.addressing]
                self.outcome.not_run[stage.addressing] = failed
                self.report("not_run", stage, failed)
                continue
            if not self.ready(stage):
                continue
            cores = stage_cores(stage, self.jobs)
            if self.running and self.busy() + cores > self.jobs:
                return
            self.pending.remove(stage)
            self.settle_or_start(pool, stage, cores)

    def settle_or_start(self, pool: ThreadPoolExecutor, stage: Any, cores: int) -> None:
        try:
            state = prepare_stage(self.repo, self.graph, stage)
        except Exception as exc:  # noqa: BLE001 - DVC refused the stage (a dependency missing): it failed
            self.fail(stage, f"{type(exc).__name__}: {exc}")
            return
        if state == "run":
            job = Job(stage, cores, stage_log(self.log_dir, stage.addressing))
            self.running[pool.submit(run_commands, job, self.on_line)] = job
            self.report("started", stage, str(job.log))
            return
        self.done.add(stage)
        kept = {"unchanged": self.outcome.unchanged, "restored": self.outcome.restored, "done": self.outcome.ran}
        kept[state].append(stage.addressing)
        self.report(state, stage, "")

    def finish(self, future: Future) -> None:
        """Record a stage whose commands ended (or discard what they wrote)."""
        job = self.running.pop(future)
        self.repo._reset()  # as DVC does after a command: the workspace changed under its caches
        try:
            code = future.result()
        except Exception as exc:  # noqa: BLE001 - the command could not start
            code, why = None, f"{type(exc).__name__}: {exc}"
        if code == 0:
            try:
                record(job.stage)
            except Exception as exc:  # noqa: BLE001 - e.g. an output the command did not write
                self.fail(job.stage, f"DVC could not record it: {exc}", job)
                return
            self.done.add(job.stage)
            self.outcome.ran.append(job.stage.addressing)
            self.report("ran", job.stage, f"{job.seconds():.0f}")
            return
        if code is not None:
            why = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        self.fail(job.stage, why, job)

    def fail(self, stage: Any, why: str, job: Job | None = None) -> None:
        back = discard(stage)
        detail = why + (f"; its output: {job.log}" if job else "")
        if back:
            detail += f"; put back as last recorded: {', '.join(back)}"
        self.outcome.failed[stage.addressing] = detail
        self.report("failed", stage, detail)

    def interrupt(self, sig: int) -> None:
        """Pass `sig` on to every running stage, wait for them (killed after STOP_GRACE_S) and discard their
        outputs: none of them is recorded."""
        for job in self.running.values():
            job.signal(sig)
        try:
            wait(list(self.running), timeout=STOP_GRACE_S)
        except KeyboardInterrupt:  # a second signal: no more waiting
            pass
        for future, job in list(self.running.items()):
            job.stop(grace=1.0)
            future.exception()  # the thread is done now
            self.running.pop(future)
            self.repo._reset()
            self.fail(job.stage, "interrupted", job)
        self.outcome.interrupted = sig

    def run(self, stop: StopSignal) -> Outcome:
        with ThreadPoolExecutor(max_workers=self.jobs, thread_name_prefix="stage") as pool:
            try:
                self.start_ready(pool)
                while self.running and not stop.signal:
                    finished, _ = wait(list(self.running), timeout=POLL_S, return_when=FIRST_COMPLETED)
                    for future in finished:
                        self.finish(future)
                    if not stop.signal:
                        self.start_ready(pool)
                if stop.signal:
                    self.interrupt(stop.signal)
            except KeyboardInterrupt:
                self.interrupt(signal.SIGINT)
        for stage in self.pending:  # left when interrupted
            self.outcome.not_run.setdefault(stage.addressing, "interrupted")
        return self.outcome


def dvc_log_to(path: Path) -> Callable[[], None]:
    """Send DVC's own messages ("Updating lock file", its git hints) to `path` instead of its console handlers (set
    when dvc is imported); returns the undo."""

    import dvc.logger  # noqa: F401 - installs DVC's handlers, which are replaced here until the undo

    path.parent.mkdir(parents=True, exist_ok=True)
    logger = logging.getLogger("dvc")
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    before = (logger.handlers[:], logger.level, logger.propagate)
    logger.handlers = [handler]
    logger.setLevel(logging.INFO)
    logger.propagate = False

    def undo() -> None:
        handler.close()
        logger.handlers, logger.level, logger.propagate = before[0], before[1], before[2]

    return undo


def reproduce(targets: list[str], jobs: int, dvc_log: Path, log_dir: Path, on_plan: Callable[[int], None],
              report: Callable[[str, Any, str], None], on_line: Callable[[str], None]) -> Outcome:
    """`dvc repro TARGETS` (all stages when none) with `jobs` cores, in the repository of the working directory;
    `on_plan` hears the number of stages of the plan. SIGTERM stops it as Ctrl-C does (`StopSignal`)."""
    from dvc.repo import Repo, lock_repo

    undo_log = dvc_log_to(dvc_log)

    stop = StopSignal()
    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with Repo() as repo, lock_repo(repo), repo.scm_context():
            graph, steps = plan(repo, targets)
            on_plan(len(steps))
            return Scheduler(repo, graph, steps, jobs, log_dir, report, on_line).run(stop)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        undo_log()
