"""A view of `dvc repro`: one line per stage ("[n/N] stage: ran in 12 s" or "unchanged"), the stage's own
output in a log file, and its last lines when a stage fails. `deca repro --jobs 1` runs it (`make run JOBS=1`);
with more jobs, `deca repro` runs the stages at once itself (infra/jobs.py).

`dvc repro` prints everything every stage prints (Beam's warnings, Ray's start-up, MLflow's database
migration): thousands of lines in which a newcomer cannot tell where the pipeline is. This wrapper
runs the same `dvc repro` (extra arguments are passed on), writes all of its output to `--log`
(default `.dvc/tmp/repro.log`), and prints where it is. Training's own progress line is shown as it
updates. The exit status is dvc's.

    python -m infra.repro                 # `make run JOBS=1`
    python -m infra.repro train           # up to one stage, as `dvc repro train`

Before dvc starts, params.yaml is read as every deca command reads it (deca.params_file.load_params_file: a size
limit, then aliases bounded): DVC's own loader has neither, and an alias bomb took it to 3 GB in 45 s.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

from deca.errors import ConfigError
from deca.params_file import load_params_file

RUNNING = re.compile(r"^Running stage '([^']+)'")
SKIPPED = re.compile(r"^Stage '([^']+)' didn't change, skipping")
PROGRESS = re.compile(r"^train: iteration \d+/\d+")
TAIL = 40


def stage_count(dvc: str) -> int:
    """The number of stages of the pipeline (foreach stages expanded)."""
    out = subprocess.run([dvc, "stage", "list", "--name-only"], capture_output=True, text=True)
    return len(out.stdout.split()) if out.returncode == 0 else 0


class Reporter:
    """Turns dvc's output, line by line, into one line per stage."""

    def __init__(self, total: int, out=None):
        self.total, self.out, self.seen = total, out, 0
        self.current: str | None = None
        self.started = time.monotonic()

    def line(self, text: str) -> None:
        if m := RUNNING.match(text):
            self.finish()
            self.current, self.started = m.group(1), time.monotonic()
            self.seen += 1
            self.print(f"{self.prefix()} {self.current}: running ...")
        elif m := SKIPPED.match(text):
            self.finish()
            self.seen += 1
            self.print(f"{self.prefix()} {m.group(1)}: unchanged")
        elif PROGRESS.match(text) and self.current:
            self.print(f"    {text.strip()}")

    def finish(self, failed: bool = False) -> None:
        if self.current:
            word = "failed after" if failed else "ran in"
            self.print(f"{self.prefix(self.seen)} {self.current}: {word} {time.monotonic() - self.started:.0f} s")
            self.current = None

    def prefix(self, n: int | None = None) -> str:
        return f"[{n or self.seen}/{self.total}]" if self.total else f"[{n or self.seen}]"

    def print(self, text: str) -> None:
        print(text, file=self.out or sys.stdout, flush=True)


def params_refused(params_path: Path) -> str | None:
    """Why DVC must not read `params_path` (its one-line error), else None (also when there is none)."""

    try:
        if params_path.is_file():
            load_params_file(params_path)
    except ConfigError as exc:
        return str(exc)
    return None


def run(dvc_args: list[str], log_path: Path, dvc: str = "dvc") -> int:
    """`dvc repro *dvc_args`, its output to `log_path`, a line per stage here; dvc's exit status."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    reporter = Reporter(stage_count(dvc))
    tail: list[str] = []
    with open(log_path, "w", encoding="utf-8") as log, \
            subprocess.Popen([dvc, "repro", *dvc_args], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, errors="replace", bufsize=1) as proc:
        for text in proc.stdout:
            log.write(text)
            for part in text.replace("\r", "\n").splitlines():
                reporter.line(part)
            tail = (tail + [text])[-TAIL:]
        code = proc.wait()
    reporter.finish(failed=code != 0)
    if code != 0:
        print(f"dvc repro failed (exit {code}); its last lines (all of them in {log_path}):", file=sys.stderr)
        sys.stderr.write("".join(tail))
    return code


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--log", type=Path, default=Path(".dvc/tmp/repro.log"), help="where dvc's own output goes")
    ap.add_argument("--dvc", default="dvc", help="the dvc executable (default: dvc on PATH)")
    args, rest = ap.parse_known_args(argv)
    refused = params_refused(Path("params.yaml"))
    if refused:
        print(f"error: {refused}; dvc repro not started", file=sys.stderr)
        return 1
    return run(rest, args.log, args.dvc)


if __name__ == "__main__":
    raise SystemExit(main())
