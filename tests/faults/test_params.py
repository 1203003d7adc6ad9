"""Params that cannot run away or change mid-run (issue 42): a params file too large to parse in time is refused
unread by `deca validate`; an alias bomb or an oversized params.yaml is refused by `make run` before DVC's own
loader (3 GB in 45 s on the bomb) reads it; a stage that DVC runs refuses a params.yaml changed since the run's
first stage read it (a second `dvc exp run` writing its `-S` values). The real `dvc repro` of that is
tests/deca/test_params_guard.py's (slow)."""
from __future__ import annotations

import contextlib
import io
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.faults.tools import ROOT, alias_bomb, case, refused

ORIGIN = "issue 42: params"
HUGE = 50_000_000  # the file: `deca validate` ran past 2 minutes on it


def huge_params(path: Path) -> Path:
    """A params file of HUGE bytes of valid YAML (a setting, then comments)."""
    path.write_text("train: {iterations: 5}\n" + "# padding\n" * (HUGE // 10), encoding="utf-8")
    return path


@pytest.mark.fault("bad input", "a 50 MB params file (deca validate --params)", ORIGIN)
def test_a_huge_params_file_is_refused_in_a_second(tmp_path, observed):
    big = huge_params(tmp_path / "params.yaml")
    start = time.perf_counter()
    line = refused(["validate", "--params", str(big), "--dvc-yaml", "none"], f"{big}: refused:", "MAX_PARAMS_BYTES")
    seconds = time.perf_counter() - start
    assert seconds < 1, f"refused, but after {seconds:.1f} s"
    observed(f"{line} ({seconds:.2f} s)")


@pytest.mark.parametrize("write, expect", [
    case("bad input", "a YAML bomb in params.yaml before DVC reads it (make run)", ORIGIN,
         lambda p: p.write_text(alias_bomb("mapping"), encoding="utf-8"), "refused: its aliases"),
    case("bad input", "a 50 MB params.yaml before DVC reads it (make run)", ORIGIN, huge_params, "MAX_PARAMS_BYTES"),
])
def test_make_run_refuses_params_before_dvc(tmp_path, observed, write, expect):
    """`make run` (python -m infra.repro) on the params.yaml `write` writes: one error line saying `expect`, and
    dvc (a stand-in that leaves a marker) never started."""
    from infra.repro import main

    write(tmp_path / "params.yaml")
    started, dvc = tmp_path / "dvc-started", tmp_path / "dvc"
    dvc.write_text(f"#!/bin/sh\ntouch {started}\n", encoding="utf-8")
    dvc.chmod(dvc.stat().st_mode | stat.S_IEXEC)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--dvc", str(dvc), "--log", str(tmp_path / "repro.log")])
    lines = err.getvalue().splitlines()
    assert not started.exists(), f"dvc was started (exit {code}): {lines[:1]}"
    assert code == 1 and len(lines) == 1 and lines[0].startswith("error: params.yaml") and expect in lines[0], \
        f"exit {code}, not one line saying {expect!r}: {lines[:3]}"
    observed(lines[0])


def stage(tmp: Path, name: str) -> tuple[int, str]:
    """`deca ls` run as DVC runs stage `name`: a child of this process (which stands for DVC), DVC_STAGE set."""
    env = {**os.environ, "DVC_ROOT": str(tmp), "DVC_STAGE": name, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "deca.cli", "ls"], cwd=tmp, env=env, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.fault("fault", "params.yaml rewritten between two stages of one DVC run (deca, as DVC runs a stage)",
                   ORIGIN)
def test_a_stage_refuses_params_changed_since_the_first(tmp_path, observed):
    """Two stages of one DVC run (children of one process, DVC_STAGE set, as DVC runs them), params.yaml rewritten
    between them as a second `dvc exp run -S train.iterations=12` does: the later stage refuses in one line."""
    params = tmp_path / "params.yaml"
    params.write_text("train: {iterations: 10}\n", encoding="utf-8")
    code, text = stage(tmp_path, "validate")
    assert code == 0, f"the first stage failed (exit {code}): {text[-200:]}"
    params.write_text("train: {iterations: 12}\n", encoding="utf-8")
    code, text = stage(tmp_path, "train")
    expect = ("params.yaml: changed since this DVC run's first stage read it", "stage train refused")
    assert code != 0, "the later stage ran on the other experiment's params: exit code 0"
    assert "Traceback" not in text and all(text.count(e) == 1 for e in expect), f"exit {code}: {text[-300:]}"
    observed(next(line.strip() for line in text.splitlines() if expect[0] in line))
