"""Params that cannot run away or change mid-run (issue 42): a params file too large to parse in time is refused
unread by `deca validate`; an alias bomb or an oversized params.yaml is refused by `make run` before DVC's own
loader (3 GB in 45 s on the bomb) reads it; a stage that DVC runs refuses a params.yaml changed since the run's
first stage read it (a second `dvc exp run` writing its `-S` values), in this process and in a real `dvc repro`."""
from __future__ import annotations

import contextlib
import io
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from bench.faults.case import ROOT, Case, must
from bench.faults.tools import refused
from bench.faults.untrusted import alias_bomb

ORIGIN = "issue 42: params"
HUGE = 50_000_000  # the file: `deca validate` ran past 2 minutes on it


def huge_params(path: Path) -> Path:
    """A params file of HUGE bytes of valid YAML (a setting, then comments)."""
    path.write_text("train: {iterations: 5}\n" + "# padding\n" * (HUGE // 10), encoding="utf-8")
    return path


def huge_file_refused(tmp: Path) -> str:
    """`deca validate --params HUGE`: one line naming the file and the limit, in under a second."""
    big = huge_params(tmp / "params.yaml")
    start = time.perf_counter()
    line = refused(["validate", "--params", str(big), "--dvc-yaml", "none"], f"{big}: refused:", "MAX_PARAMS_BYTES")
    seconds = time.perf_counter() - start
    must(seconds < 1, f"refused, but after {seconds:.1f} s")
    return f"{line} ({seconds:.2f} s)"


def before_dvc(text: Callable[[Path], object], expect: str) -> Callable[[Path], str]:
    """`make run` (python -m infra.repro) on the params.yaml `text` writes: one error line saying `expect`, and
    dvc (a stand-in that leaves a marker) never started."""
    def check(tmp: Path) -> str:
        from infra.repro import main

        text(tmp / "params.yaml")
        started, dvc = tmp / "dvc-started", tmp / "dvc"
        dvc.write_text(f"#!/bin/sh\ntouch {started}\n", encoding="utf-8")
        dvc.chmod(dvc.stat().st_mode | stat.S_IEXEC)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["--dvc", str(dvc), "--log", str(tmp / "repro.log")])
        lines = err.getvalue().splitlines()
        must(not started.exists(), f"dvc was started (exit {code}): {lines[:1]}")
        must(code == 1 and len(lines) == 1 and lines[0].startswith("error: params.yaml") and expect in lines[0],
             f"exit {code}, not one line saying {expect!r}: {lines[:3]}")
        return lines[0]
    return check


def stage(tmp: Path, name: str) -> tuple[int, str]:
    """`deca ls` run as DVC runs stage `name`: a child of this process (which stands for DVC), DVC_STAGE set."""
    env = {**os.environ, "DVC_ROOT": str(tmp), "DVC_STAGE": name, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "deca.cli", "ls"], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


def changed_between_stages(tmp: Path) -> str:
    """Two stages of one DVC run (children of one process, DVC_STAGE set, as DVC runs them), params.yaml rewritten
    between them as a second `dvc exp run -S train.iterations=12` does: the later stage refuses in one line."""
    params = tmp / "params.yaml"
    params.write_text("train: {iterations: 10}\n", encoding="utf-8")
    code, text = stage(tmp, "validate")
    must(code == 0, f"the first stage failed (exit {code}): {text[-200:]}")
    params.write_text("train: {iterations: 12}\n", encoding="utf-8")
    code, text = stage(tmp, "train")
    expect = ("params.yaml: changed since this DVC run's first stage read it", "stage train refused")
    must(code != 0, "the later stage ran on the other experiment's params: exit code 0")
    must("Traceback" not in text and all(text.count(e) == 1 for e in expect), f"exit {code}: {text[-300:]}")
    return next(line.strip() for line in text.splitlines() if expect[0] in line)


def cases() -> list[Case]:
    """Oversized and bomb params files, and params.yaml changed under a running DVC pipeline."""
    slow = "tests/deca/test_params_guard.py::test_dvc_repro_stops_at_the_stage_after_params_yaml_changed"
    return [
        Case("bad input", "a 50 MB params file (deca validate --params)", ORIGIN, huge_file_refused),
        Case("bad input", "a YAML bomb in params.yaml before DVC reads it (make run)", ORIGIN,
             before_dvc(lambda p: p.write_text(alias_bomb("mapping"), encoding="utf-8"), "refused: its aliases")),
        Case("bad input", "a 50 MB params.yaml before DVC reads it (make run)", ORIGIN,
             before_dvc(huge_params, "MAX_PARAMS_BYTES")),
        Case("fault", "params.yaml rewritten between two stages of one DVC run (deca, as DVC runs a stage)", ORIGIN,
             changed_between_stages),
        Case("fault", "params.yaml rewritten between two stages of a real dvc repro (a second dvc exp run's -S)",
             ORIGIN, test=slow),
    ]
