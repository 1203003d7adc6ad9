"""Reproducing a run and its lineage (issue 42, items 3 and 4): `deca reproduce` follows the MLflow run a
registered version, a run id or a run folder names, never a folder name a later run reused; a reproduction
trains into its own folder, which predict, serve, evaluate and register do not take as the latest run until
adopted; the outputs the pipeline rewrites before `train` starts (dvc.lock, eval/) do not make a run's tree
dirty, so `make run`'s run reproduces on a clean clone without --force. The cases that need MLflow runs,
Ray or the DVC pipeline are the slow tests they name."""
from __future__ import annotations

import contextlib
import io
import json
import subprocess
from pathlib import Path

from bench.faults.case import Case, must
from bench.faults.tools import refused

ORIGIN = "issue 42: reproduce and lineage"
RUN_ID = "3f2a0c1d" * 4


def run_folder(tmp: Path, name: str, **record) -> Path:
    """A run folder tmp/checkpoints/<name> with a best model and its record."""
    folder = tmp / "checkpoints" / name
    (folder / "best").mkdir(parents=True)
    (folder / "best" / "model.pt").write_bytes(b"model")
    (folder / "deca_run.json").write_text(json.dumps({"mlflow_run_id": name, **record}), encoding="utf-8")
    return folder


def reproduction_is_not_the_latest_run(tmp: Path) -> str:
    """A reproduction written after `pipeline` (as while `deca reproduce` trains) is skipped by the default
    model of predict, serve and evaluate, which say so; adopted, it is the latest run."""
    import os

    from deca.runs import REPRODUCTION, adopt, resolve_checkpoint

    run_folder(tmp, "pipeline")
    copy = run_folder(tmp, f"reproduce-{RUN_ID[:8]}-1", **{REPRODUCTION: RUN_ID})
    os.utime(tmp / "checkpoints" / "pipeline" / "deca_run.json", (1, 1))
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        path, _ = resolve_checkpoint(None, None, str(tmp / "checkpoints"))
    must(path.parent.parent.name == "pipeline", f"the default model is {path}, the reproduction's")
    must(f"a reproduction of run {RUN_ID}" in err.getvalue(), f"skipped silently: {err.getvalue()!r}")
    adopt(copy)
    with contextlib.redirect_stderr(io.StringIO()):
        path, _ = resolve_checkpoint(None, None, str(tmp / "checkpoints"))
    must(path.parent.parent == copy, f"adopted, yet the default model is {path}")
    return "skipped, named on stderr; adopted: the latest run"


def pipeline_outputs_leave_the_tree_clean(tmp: Path) -> str:
    """dvc.lock and a tracked output of the pipeline (eval/metrics.json) rewritten after the commit: not dirty;
    a changed code file: dirty."""
    import yaml

    from deca.lineage import git_state

    (tmp / "toolkit").mkdir()
    (tmp / "toolkit" / "model.py").write_text("DIM = 1\n")
    (tmp / "eval").mkdir()
    (tmp / "eval" / "metrics.json").write_text("{}")
    lock = {"stages": {"evaluate": {"outs": [{"path": "eval/metrics.json", "md5": "1"}]}}}
    (tmp / "dvc.lock").write_text(yaml.safe_dump(lock))
    git = ["git", "-C", str(tmp), "-c", "user.email=t@t", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    (tmp / "dvc.lock").write_text(yaml.safe_dump({**lock, "schema": "2.0"}))
    (tmp / "eval" / "metrics.json").write_text('{"decascore": 1}')
    must(git_state(tmp)["dirty"] is False, "the pipeline's own outputs make the tree dirty")
    (tmp / "toolkit" / "model.py").write_text("DIM = 2\n")
    must(git_state(tmp)["dirty"] is True, "a changed code file leaves the tree clean")
    return "dvc.lock and eval/metrics.json: clean; toolkit/model.py: dirty"


def adopt_what_is_no_reproduction(tmp: Path) -> str:
    run_folder(tmp, "pipeline")
    return refused(["reproduce", "checkpoints/pipeline", "--adopt"], "not a reproduction", once=True)


def cases() -> list[Case]:
    """Reproduce by run id, reproductions kept apart, lineage complete after `make run`."""
    b, f = "bad input", "fault"
    t_cli, t_ray = "tests/train/test_reproduce_cli.py::", "tests/train/test_reproduce.py::"
    return [
        Case(b, "deca reproduce DIR --adopt on a folder that is no reproduction", ORIGIN,
             adopt_what_is_no_reproduction),
        Case(b, "deca reproduce with a changed code file: listed, refused in one line without --force", ORIGIN,
             test=t_cli + "test_the_pipeline_s_own_outputs_are_no_difference_and_code_is"),
        Case(f, "a reproduction training now is not the latest run of predict/serve/evaluate", ORIGIN,
             reproduction_is_not_the_latest_run),
        Case(f, "dvc.lock and eval/ rewritten by make run before train: the run's tree is not dirty", ORIGIN,
             pipeline_outputs_leave_the_tree_clean),
        Case(f, "deca reproduce models:/NAME/1 after a later run reused its folder: the version's run", ORIGIN,
             test=t_cli + "test_a_version_or_a_run_id_is_the_run_that_trained_it_not_the_folder_named_after_it"),
        Case(f, "deca reproduce from MLflow alone (folder gone): identical, in a folder not the latest", ORIGIN,
             test=t_ray + "test_the_workspace_is_as_recorded_and_retraining_gives_identical_weights"),
        Case(f, "a run trained with dvc.lock and eval/ rewritten: reproduced on a git clone, no --force", ORIGIN,
             test=t_ray + "test_a_run_trained_as_make_run_trains_reproduces_on_a_clean_clone_without_force"),
        Case(f, "make run's run on a clean clone: as recorded, reproduced without --force", ORIGIN,
             test="tests/test_dvc_pipeline.py::test_make_run_s_run_reproduces_on_a_clean_clone_without_force"),
    ]
