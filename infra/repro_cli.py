"""`deca repro [TARGET ...] [--jobs N]`: `dvc repro`, with the stages that do not depend on each other run N at a
time (default: one per CPU), each recorded by DVC as `dvc repro` records it (infra/jobs.py). `make run` runs it.

    deca repro                      # the whole pipeline, a stage per core
    deca repro train --jobs 2       # up to one stage, as `dvc repro train`, two at a time
    deca repro --jobs 1 -f          # `dvc repro -f` itself, one stage at a time (any option of dvc repro)

One line per stage here ("[n/N] stage: ran in 12 s", "unchanged", "restored from the run-cache"); each stage's own
output goes to .dvc/tmp/repro/<stage>.log and DVC's to .dvc/tmp/repro.log. A stage that fails stops the stages
that depend on it; the others finish and are recorded; the exit status is then 1 and the failed stage, its log
and its last lines are shown (`dvc status` names what is stale). Ctrl-C stops every running stage (130); no
stage that did not finish is recorded, and none leaves an output half-written.
The stages a stage may run beside: a stage takes one core, or what dvc.yaml's `meta: {cores: ...}` says (train:
its workers x cpus_per_worker); one that needs every core runs alone.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import Any

from dvc.exceptions import DvcException

from infra.jobs import reproduce
from infra.jobs_run import LOG_DIR, stage_log, tail
from infra.repro import PROGRESS, TAIL, params_refused, run as run_serial

PASS_THROUGH = "dvc_options"  # with --jobs 1, for `dvc repro` itself
DVC_LOG = Path(".dvc/tmp/repro.log")


def cpus() -> int:
    """The CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {value}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("targets", nargs="*", metavar="TARGET", help="stages to reproduce, with what they need "
                        "(default: every stage of dvc.yaml)")
    parser.add_argument("-j", "--jobs", type=positive, default=cpus(),
                        help="cores to fill with stages (default: %(default)s, the CPUs here); 1: `dvc repro`")
    parser.add_argument("--log", type=Path, default=DVC_LOG, help="where DVC's own output goes")


class Lines:
    """One line per stage event, numbered in the order the stages are taken up."""

    def __init__(self, out=None):
        self.total, self.out = 0, out
        self.number: dict[str, int] = {}
        self.lock = threading.Lock()

    def planned(self, total: int) -> None:
        self.total = total

    def event(self, kind: str, stage: Any, detail: str) -> None:
        name = stage.addressing
        n = self.number.setdefault(name, len(self.number) + 1)
        text = {"started": "running ...", "ran": f"ran in {detail} s", "unchanged": "unchanged",
                "restored": "restored from the run-cache", "done": "reproduced", "failed": f"FAILED: {detail}",
                "not_run": f"not run: it depends on {detail}"}[kind]
        self.print(f"[{n}/{self.total}] {name}: {text}")

    def line(self, text: str) -> None:
        """A line of a stage's output: training's progress is shown."""
        if PROGRESS.match(text.strip()):
            self.print(f"    {text.strip()}")

    def print(self, text: str) -> None:
        with self.lock:
            print(text, file=self.out or sys.stdout, flush=True)


def summary(outcome, log_dir: Path) -> int:
    """The closing lines (to stderr when something failed) and the exit status."""
    if outcome.interrupted:
        print("interrupted: no stage that was running is recorded; `dvc status` names what is stale", file=sys.stderr)
        return 128 + outcome.interrupted
    if not outcome.failed:
        print(f"done: {len(outcome.ran)} ran, {len(outcome.restored)} restored from the run-cache, "
              f"{len(outcome.unchanged)} unchanged")
        return 0
    for name, why in outcome.failed.items():
        print(f"error: stage {name} failed ({why})", file=sys.stderr)
        last = tail(stage_log(log_dir, name), TAIL)
        if last:
            print(f"its last lines:\n{last}", file=sys.stderr, end="" if last.endswith("\n") else "\n")
    if outcome.not_run:
        print(f"not run (they depend on it): {', '.join(outcome.not_run)}", file=sys.stderr)
    print(f"{len(outcome.ran)} other stages ran and are recorded; `dvc status` names what is stale", file=sys.stderr)
    return 1


def run(args) -> int:
    refused = params_refused(Path("params.yaml"))
    if refused:
        print(f"error: {refused}; dvc repro not started", file=sys.stderr)
        return 1
    options = list(getattr(args, "dvc_options", None) or [])
    if args.jobs == 1:
        return run_serial([*options, *args.targets], args.log)
    if options:
        print(f"error: {' '.join(options)}: not with --jobs {args.jobs}; `deca repro --jobs 1 ...` passes options "
              "to `dvc repro`", file=sys.stderr)
        return 2

    lines = Lines()
    try:
        outcome = reproduce(args.targets, args.jobs, args.log, LOG_DIR, lines.planned, lines.event, lines.line)
    except DvcException as exc:  # before any stage ran: dvc.yaml unreadable, an unknown target, the lock held
        cause = f" ({' '.join(str(exc.__cause__).split())})" if exc.__cause__ else ""
        print(f"error: {exc}{cause}; no stage was run", file=sys.stderr)
        return 1
    return summary(outcome, LOG_DIR)
