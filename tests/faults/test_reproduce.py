"""Reproducing a run and its lineage (issue 42, items 3 and 4): a reproduction trains into its own folder, which
predict, serve, evaluate and register do not take as the latest run until adopted; the outputs the pipeline
rewrites before `train` starts (dvc.lock, eval/) do not make a run's tree dirty, so `make run`'s run reproduces
on a clean clone without --force. What needs MLflow runs, Ray or the DVC pipeline is in
tests/train/test_reproduce*.py and tests/infra/test_dvc_repro.py (slow)."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.faults.tools import refused

ORIGIN = "issue 42: reproduce and lineage"
RUN_ID = "3f2a0c1d" * 4


def run_folder(tmp: Path, name: str, **record) -> Path:
    """A run folder tmp/checkpoints/<name> with a best model and its record."""
    folder = tmp / "checkpoints" / name
    (folder / "best").mkdir(parents=True)
    (folder / "best" / "model.pt").write_bytes(b"model")
    (folder / "deca_run.json").write_text(json.dumps({"mlflow_run_id": name, **record}), encoding="utf-8")
    return folder


@pytest.mark.fault("bad input", "deca reproduce DIR --adopt on a folder that is no reproduction", ORIGIN)
def test_adopting_what_is_no_reproduction_is_refused(tmp_path, observed):
    run_folder(tmp_path, "pipeline")
    observed(refused(["reproduce", "checkpoints/pipeline", "--adopt"], "not a reproduction", once=True))


@pytest.mark.fault("fault", "a reproduction training now is not the latest run of predict/serve/evaluate", ORIGIN)
def test_a_reproduction_is_not_the_latest_run_until_adopted(tmp_path, observed):
    """A reproduction written after `pipeline` (as while `deca reproduce` trains) is skipped by the default
    model of predict, serve and evaluate, which say so; adopted, it is the latest run."""
    from deca.runs import REPRODUCTION, adopt, resolve_checkpoint

    run_folder(tmp_path, "pipeline")
    copy = run_folder(tmp_path, f"reproduce-{RUN_ID[:8]}-1", **{REPRODUCTION: RUN_ID})
    os.utime(tmp_path / "checkpoints" / "pipeline" / "deca_run.json", (1, 1))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        path, _ = resolve_checkpoint(None, None, str(tmp_path / "checkpoints"))
    assert path.parent.parent.name == "pipeline", f"the default model is {path}, the reproduction's"
    assert f"a reproduction of run {RUN_ID}" in err.getvalue(), f"skipped silently: {err.getvalue()!r}"
    adopt(copy)
    with contextlib.redirect_stderr(io.StringIO()):
        path, _ = resolve_checkpoint(None, None, str(tmp_path / "checkpoints"))
    assert path.parent.parent == copy, f"adopted, yet the default model is {path}"
    observed("skipped, named on stderr; adopted: the latest run")


@pytest.mark.fault("fault", "dvc.lock and eval/ rewritten by make run before train: the run's tree is not dirty",
                   ORIGIN)
def test_the_pipeline_s_outputs_leave_the_tree_clean(tmp_path, observed):
    """dvc.lock and a tracked output of the pipeline (eval/metrics.json) rewritten after the commit: not dirty;
    a changed code file: dirty."""
    import yaml

    from deca.lineage import git_state

    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "model.py").write_text("DIM = 1\n")
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "metrics.json").write_text("{}")
    lock = {"stages": {"evaluate": {"outs": [{"path": "eval/metrics.json", "md5": "1"}]}}}
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump(lock))
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    (tmp_path / "dvc.lock").write_text(yaml.safe_dump({**lock, "schema": "2.0"}))
    (tmp_path / "eval" / "metrics.json").write_text('{"decascore": 1}')
    assert git_state(tmp_path)["dirty"] is False, "the pipeline's own outputs make the tree dirty"
    (tmp_path / "toolkit" / "model.py").write_text("DIM = 2\n")
    assert git_state(tmp_path)["dirty"] is True, "a changed code file leaves the tree clean"
    observed("dvc.lock and eval/metrics.json: clean; toolkit/model.py: dirty")
