"""deca/params_guard.py: a stage that DVC runs refuses a params.yaml changed since the run's first stage read it
(issue 42: two `dvc exp run` at once had the first run its stages on the second's `-S` values)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from deca import params_guard
from deca.errors import ConfigError
from tests.conftest import ROOT

BIN = ROOT / ".venv" / "bin"


@pytest.fixture
def workspace(tmp_path, monkeypatch) -> Path:
    """A workspace with a params.yaml, as DVC runs a stage in it (DVC_ROOT); DVC_STAGE is set per stage."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    (tmp_path / "params.yaml").write_text("train: {iterations: 10}\n")
    return tmp_path


def stage(monkeypatch, name: str, *argv: str) -> tuple[int, str]:
    """(exit code, stderr) of `deca ARGV` run in this process as DVC runs stage `name`."""
    import contextlib
    import io

    from deca.cli import main

    monkeypatch.setenv("DVC_STAGE", name)
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(list(argv))
    return code, err.getvalue()


def test_a_later_stage_refuses_params_changed_since_the_first(workspace, monkeypatch):
    assert stage(monkeypatch, "first", "ls") == (0, "")
    assert stage(monkeypatch, "second", "ls") == (0, "")
    (workspace / "params.yaml").write_text("train: {iterations: 12}\n")  # the other experiment's -S value
    code, err = stage(monkeypatch, "third", "ls")
    assert code == 1 and err.count("\n") == 1, err
    assert err.startswith("error: params.yaml: changed since this DVC run's first stage read it") and \
        "stage third refused" in err and "dvc exp run --queue" in err


def test_a_change_while_a_stage_runs_fails_it(workspace, monkeypatch):
    """Params written while the stage ran: DVC would record its results under them, so it fails at its end."""
    monkeypatch.setenv("DVC_STAGE", "train")
    finished = params_guard.begin("params.yaml")
    (workspace / "params.yaml").write_text("train: {iterations: 12}\n")
    with pytest.raises(ConfigError, match=r"^params.yaml: changed while this stage ran .* stage train refused"):
        finished()


def test_outside_dvc_nothing_is_checked_or_recorded(workspace, monkeypatch):
    monkeypatch.delenv("DVC_STAGE", raising=False)
    params_guard.begin("params.yaml")
    (workspace / "params.yaml").write_text("train: {iterations: 12}\n")
    assert stage(monkeypatch, "", "ls")[0] == 0  # DVC_STAGE empty: not a stage either
    assert not (workspace / params_guard.RECORDS).exists()


def test_the_dvc_process_is_the_nearest_ancestor_started_without_the_stage(workspace):
    """Through the shell DVC runs a command in, the key is this process (which, like DVC, has no DVC_STAGE)."""
    probe = "from deca.params_guard import dvc_process; print(dvc_process('s'))"
    env = {**os.environ, "DVC_STAGE": "s", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(["sh", "-c", f"{sys.executable} -c \"{probe}\"; true"], env=env, capture_output=True,
                         text=True, check=True).stdout.strip()
    start = Path(f"/proc/{os.getpid()}/stat").read_text().rsplit(")", 1)[1].split()[19]
    assert out == f"{os.getpid()}-{start}"


def test_records_of_finished_runs_are_removed(workspace, monkeypatch):
    folder = workspace / params_guard.RECORDS
    folder.mkdir(parents=True)
    (folder / "999999999-1.json").write_text("{}")
    assert stage(monkeypatch, "first", "ls")[0] == 0
    assert [p.stem for p in folder.iterdir()] == [params_guard.dvc_process("first")]


DVC_YAML = """\
stages:
  first:
    cmd: deca ls > first.txt
    params: [train.iterations]
    outs: [first.txt]
  other:  # as a second `dvc exp run -S train.iterations=12` writes params.yaml while this run goes on
    cmd: python other.py
    deps: [first.txt]
    outs: [other.txt]
  later:
    cmd: deca ls > later.txt
    deps: [other.txt]
    params: [train.iterations]
    outs: [later.txt]
"""
OTHER = """\
from pathlib import Path
p = Path("params.yaml")
p.write_text(p.read_text().replace("10", "12"))
Path("other.txt").write_text("done\\n")
"""


@pytest.mark.fault("fault", "params.yaml rewritten between two stages of a real dvc repro (a second dvc exp "
                            "run's -S)", "issue 42: params")
@pytest.mark.slow
def test_dvc_repro_stops_at_the_stage_after_params_yaml_changed(tmp_path):
    """A real `dvc repro`: params.yaml changed between two stages; the later stage refuses in one line, DVC
    records nothing for it; the next `dvc repro` (a new run, on the new params) goes through."""
    for name, text in {"dvc.yaml": DVC_YAML, "other.py": OTHER, "params.yaml": "train: {iterations: 10}\n"}.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(ROOT),
           "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def dvc(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "dvc"), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=600)

    assert dvc("init", "--no-scm", "-q").returncode == 0
    first = dvc("repro")
    out = first.stdout + first.stderr
    assert first.returncode != 0 and "Running stage 'later'" in out, out[-3000:]
    errors = [line for line in out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "params.yaml: changed since this DVC run's first stage read it" in errors[0] \
        and "stage later refused" in errors[0], out[-3000:]
    assert (tmp_path / "later.txt").read_text() == "" and "later:" not in (tmp_path / "dvc.lock").read_text()
    again = dvc("repro")
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert "iterations: 12" in (tmp_path / "dvc.lock").read_text().split("later:")[1]
    assert len(list((tmp_path / params_guard.RECORDS).iterdir())) == 1  # the first run's record went
