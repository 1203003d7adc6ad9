"""`deca reproduce` (train/reproduce_cli.py) follows a run, not a name: MLflow runs in a sqlite store, no Ray.

Run A trained the folder `pipeline` and was registered as decanlp/1; a later run B trained `pipeline` again
(as every `dvc repro` does). `deca reproduce models:/decanlp/1` and `deca reproduce <A's run id>` check A,
with A's params and logged model; the folder name stands for B. The outputs the pipeline rewrites (dvc.lock,
eval/) do not count as differences; a code change does, and stops a reproduction unless --force.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from deca.cli import main
from deca.config import Params
from deca.io import write_json
from tests.deca.test_lineage import project as git_project
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)
from tests.infer.test_mlflow_model import make_run

pytestmark = pytest.mark.slow  # a sqlite MLflow store and a model logged: ~30 s


def start(root: Path, uri: str, vocab: Path, name: str, lineage: bool) -> str:
    """A finished MLflow run of `name` with full params (and their lineage when `lineage`); its run id."""
    from train.tracking import end_run, record_lineage, start_run, vocab_fingerprint

    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(root / "data" / "processed"),
                                      vocab_path=str(vocab))
    params.model = dataclasses.replace(params.model, word_vectors=None)
    run_id = start_run(uri, "repro", name, dataclasses.asdict(params), project=root, vocab=vocab_fingerprint(vocab))
    if lineage:
        record_lineage(uri, run_id, params, ["sst"], root, vocab_fingerprint(vocab))
    end_run(uri, run_id)
    return run_id


@pytest.fixture(scope="module")
def reused(tmp_path_factory, mini_data, checkpoint):  # noqa: F811
    """(root, run A's id, run B's id): A trained `pipeline` and is decanlp/1; then B trained `pipeline`."""
    root = git_project(tmp_path_factory.mktemp("reproduce"))
    uri, vocab = f"sqlite:///{root / 'mlflow.db'}", mini_data[1]
    first = start(root, uri, vocab, "pipeline", lineage=True)
    run_dir = make_run((root, uri, vocab), "pipeline", checkpoint)
    write_json(run_dir / "deca_run.json", {"mlflow_run_id": first, "tracking_uri": uri, "finished": True})
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    try:
        assert main(["register", "--run", str(run_dir), "--name", "decanlp"]) == 0
    finally:
        mp.undo()
    second = start(root, uri, vocab, "pipeline", lineage=False)
    write_json(run_dir / "deca_run.json", {"mlflow_run_id": second, "tracking_uri": uri, "finished": True,
                                           "params": {}})
    return root, first, second


@pytest.fixture
def in_root(reused, monkeypatch):
    root = reused[0]
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root / 'mlflow.db'}")
    return reused


@pytest.mark.fault("fault", "deca reproduce models:/NAME/1 after a later run reused its folder: the version's run",
                   "issue 42: reproduce and lineage")
@pytest.mark.parametrize("how", ["version", "run id"])
def test_a_version_or_a_run_id_is_the_run_that_trained_it_not_the_folder_named_after_it(in_root, how, capsys):
    _, first, _ = in_root
    capsys.readouterr()
    assert main(["reproduce", {"version": "models:/decanlp/1", "run id": first}[how], "--check"]) == 0
    out = capsys.readouterr().out
    assert f"run: {first} in sqlite:///" in out and "workspace: as recorded" in out


def test_the_folder_stands_for_the_run_it_holds_now(in_root, capsys):
    _, _, second = in_root
    assert main(["reproduce", "pipeline", "--check"]) == 1
    assert f"run {second} in sqlite:///" in capsys.readouterr().err


def test_the_recorded_weights_are_the_model_the_version_logged(in_root, checkpoint, tmp_path):  # noqa: F811
    from deca.run_source import resolve_run
    from train.reproduce import recorded_weights

    root, first, _ = in_root
    source = resolve_run("models:/decanlp/1", str(root / "checkpoints"))
    assert source.run_id == first and source.model_id
    assert recorded_weights(source, tmp_path).read_bytes() == Path(checkpoint).read_bytes()


@pytest.mark.fault("bad input", "deca reproduce with a changed code file: listed, refused in one line without "
                                "--force", "issue 42: reproduce and lineage")
def test_the_pipeline_s_own_outputs_are_no_difference_and_code_is(in_root, capsys):
    root = in_root[0]
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["train"]["deps"][0]["md5"] = "a-later-run.dir"  # what `make run` does before train starts
    (root / "dvc.lock").write_text(yaml.safe_dump(lock), encoding="utf-8")
    (root / "eval" / "metrics.json").write_text(json.dumps({"decascore": 1.0}))
    try:
        capsys.readouterr()
        assert main(["reproduce", "models:/decanlp/1", "--check"]) == 0
        (root / "toolkit" / "model.py").write_text("DIM = 5\n")
        assert main(["reproduce", "models:/decanlp/1", "--check"]) == 1
        assert "differs: code: 1 file(s) differ from the recorded commit" in capsys.readouterr().out
        assert main(["reproduce", "models:/decanlp/1", "--no-progress"]) == 1
        err = capsys.readouterr().err
        assert "the workspace differs from the run's lineage in 1 way(s)" in err and "--force" in err
        assert len(err.strip().splitlines()) == 1
    finally:
        subprocess.run(["git", "-C", str(root), "checkout", "--", "."], check=True)


def test_adopting_a_folder_that_is_no_reproduction_is_one_line(in_root, capsys):
    assert main(["reproduce", "pipeline", "--adopt"]) == 1
    err = capsys.readouterr().err.strip()
    assert "--adopt checkpoints/pipeline: not a reproduction" in err and len(err.splitlines()) == 1


def test_rebase_moves_the_run_s_paths_under_this_checkout(tmp_path):
    from train.reproduce import rebase

    params = {"data": {"processed_dir": "/old/data/processed", "vocab_path": "/shared/vocab.txt"},
              "train": {"init_from": None}}
    moved = rebase(params, {"project": "/old"}, tmp_path)
    assert moved["data"] == {"processed_dir": str(tmp_path / "data" / "processed"), "vocab_path": "/shared/vocab.txt"}
    assert rebase(params, {}, tmp_path) == params and params["data"]["processed_dir"] == "/old/data/processed"
