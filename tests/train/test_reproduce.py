"""`deca reproduce` (train/reproduce.py, train/reproduce_cli.py) on a real training run (slow).

The four-iteration run of tests/train/test_logged_model.py, in its git project: the workspace is as
recorded; registered as a model version, retraining it (`deca reproduce models:/...`) with the recorded params
and seed gives a bit-identical best model, from what MLflow recorded alone (the run folder moved away), into a
reproduction folder that is not the latest run; a changed prepare stage in dvc.lock and a changed code file
are listed and stop a reproduction unless --force. The run was trained as `make run` trains (dvc.lock and eval/
rewritten since the commit): with those results committed, a clean `git clone` reproduces it without --force.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from deca.cli import main
from tests.train.test_logged_model import in_project, trained  # noqa: F401  (the trained run)

pytestmark = pytest.mark.slow


@pytest.mark.fault("fault", "deca reproduce from MLflow alone (folder gone): identical, in a folder not the "
                            "latest", "issue 42: reproduce and lineage")
def test_the_workspace_is_as_recorded_and_retraining_gives_identical_weights(in_project, capsys):  # noqa: F811
    from deca.runs import REPRODUCTION, latest_run

    root, _, outcome = in_project
    capsys.readouterr()
    assert main(["reproduce", "logged", "--check"]) == 0
    assert "workspace: as recorded" in capsys.readouterr().out
    assert main(["register", "--run", "logged", "--name", "repro", "--alias", "champion"]) == 0
    moved = root / "elsewhere"
    (root / "checkpoints" / "logged").rename(moved)  # a later run took the name: MLflow alone has the run
    try:
        assert main(["reproduce", "models:/repro@champion", "--no-progress"]) == 0
    finally:
        moved.rename(root / "checkpoints" / "logged")
    out = capsys.readouterr().out
    assert f"identical: the best model of reproduce-{outcome.mlflow_run_id[:8]}-" in out
    (folder,) = (root / "checkpoints").glob("reproduce-*")
    assert json.loads((folder / "deca_run.json").read_text())[REPRODUCTION] == outcome.mlflow_run_id
    assert f"reproduction: {folder}; no command takes it as the latest run" in out
    assert latest_run(root / "checkpoints") == root / "checkpoints" / "logged"


def test_a_version_that_is_not_there_is_one_line(in_project, capsys):  # noqa: F811
    assert main(["reproduce", "models:/nothing@champion", "--check"]) == 1
    assert "models:/nothing@champion: no such model version in" in capsys.readouterr().err


def test_a_changed_input_in_dvc_lock_and_changed_code_are_listed_and_stop_the_reproduction(in_project,  # noqa: F811
                                                                                          capsys):
    root, _, _ = in_project
    lock = root / "dvc.lock"
    before = lock.read_text()
    lock.write_text(before.replace("ee.dir", "changed.dir"), encoding="utf-8")
    (root / "toolkit" / "model.py").write_text("DIM = 9\n")
    try:
        capsys.readouterr()
        assert main(["reproduce", "logged", "--check"]) == 1
        out = capsys.readouterr().out
        assert "differs: dvc.lock prepare@sst data/raw/sst md5: recorded ee.dir, here changed.dir" in out
        assert "differs: code: 1 file(s) differ from the recorded commit" in out and "toolkit/model.py" in out
        assert main(["reproduce", "logged", "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert "the workspace differs from the run's lineage in 2 way(s)" in err and "--force" in err
    finally:
        lock.write_text(before, encoding="utf-8")  # as the fixture's `make run` left it
        subprocess.run(["git", "-C", str(root), "checkout", "--", "toolkit"], check=True)


def test_weights_that_differ_are_reported_per_tensor(in_project, tmp_path):  # noqa: F811
    import torch

    from mqan.checkpoint import read_checkpoint
    from train.reproduce import compare_weights

    _, _, outcome = in_project
    best = outcome.best / "model.pt"
    payload = read_checkpoint(best)
    key = next(k for k, v in payload["state_dict"].items() if v.is_floating_point() and v.numel())
    payload["state_dict"][key] = payload["state_dict"][key] + 0.5
    torch.save(payload, tmp_path / "other.pt")
    assert compare_weights(best, best) == {}
    assert compare_weights(best, tmp_path / "other.pt") == {key: pytest.approx(0.5)}


@pytest.mark.fault("fault", "a run trained with dvc.lock and eval/ rewritten: reproduced on a git clone, no "
                            "--force", "issue 42: reproduce and lineage")
def test_a_run_trained_as_make_run_trains_reproduces_on_a_clean_clone_without_force(in_project, tmp_path,  # noqa: F811
                                                                                     monkeypatch, capsys):
    root, _, outcome = in_project
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "-C", str(root), "commit", "-qam", "after make run: dvc.lock, eval/"], check=True)
    clone = tmp_path / "clone"
    subprocess.run([*git, "clone", "-q", str(root), str(clone)], check=True)
    monkeypatch.chdir(clone)
    capsys.readouterr()
    assert main(["reproduce", outcome.mlflow_run_id, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "differs" not in out and f"identical: the best model of reproduce-{outcome.mlflow_run_id[:8]}-" in out
    assert len(list((clone / "checkpoints").glob("reproduce-*"))) == 1
