"""`deca lineage` (infer/lineage_cli.py) on real MLflow runs in a sqlite store, without Ray.

A run folder with its MLflow run (as tests/infer/test_mlflow_model.py makes them) records its lineage
as `deca train` does (train.tracking.record_lineage) in a git project with a dvc.lock; its model is logged
and registered with `deca register`. `deca lineage` then prints the chain from the run folder, the run id
and models:/NAME@ALIAS, and a run that recorded no lineage and logged no model is told as missing links.
"""
from __future__ import annotations

import dataclasses
import json

import pytest

from deca.cli import main
from deca.config import Params
from tests.deca.test_lineage import project as git_project
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)
from tests.infer.test_mlflow_model import make_run


@pytest.fixture(scope="module")
def traced(tmp_path_factory, mini_data, checkpoint):  # noqa: F811
    """(root, uri, run dir, run id): a run with lineage whose model is registered as traced@champion."""
    from train.tracking import record_lineage, vocab_fingerprint

    root = git_project(tmp_path_factory.mktemp("lineage"))
    uri, vocab = f"sqlite:///{root / 'mlflow.db'}", mini_data[1]
    run_dir = make_run((root, uri, vocab), "traced", checkpoint)
    run_id = json.loads((run_dir / "deca_run.json").read_text())["mlflow_run_id"]
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(root / "data" / "processed"))
    params.model = dataclasses.replace(params.model, word_vectors=None)
    record_lineage(uri, run_id, params, ["sst"], root, vocab_fingerprint(vocab))
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    try:
        assert main(["register", "--run", str(run_dir), "--name", "traced", "--alias", "champion"]) == 0
    finally:
        mp.undo()
    return root, uri, run_dir, run_id


@pytest.fixture
def in_root(traced, monkeypatch):
    root, uri, _, _ = traced
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    return traced


def test_the_run_records_tags_and_dataset_inputs(in_root):
    from deca.metric_logging import client

    _, uri, _, run_id = in_root
    run = client(uri).get_run(run_id)
    assert run.data.tags["lineage.dirty"] == "false" and len(run.data.tags["lineage.commit"]) == 40
    assert run.data.tags["lineage.data.sst/train"] != "none"
    inputs = {d.dataset.name: d for d in run.inputs.dataset_inputs}
    assert set(inputs) == {"sst/train", "sst/validation"}
    assert inputs["sst/train"].dataset.digest == run.data.tags["lineage.data.sst/train"][:36]
    version = client(uri).get_model_version_by_alias("traced", "champion")
    assert {k: v for k, v in version.tags.items() if k.startswith("lineage.")} == \
        {k: v for k, v in run.data.tags.items() if k.startswith("lineage.")}


@pytest.mark.parametrize("how", ["folder", "run id", "alias"])
def test_the_chain_from_a_folder_a_run_id_and_an_alias(in_root, how, capsys):
    root, _, run_dir, run_id = in_root
    source = {"folder": str(run_dir), "run id": run_id, "alias": "models:/traced@champion"}[how]
    capsys.readouterr()
    assert main(["lineage", source]) == 0
    out = capsys.readouterr().out
    for expected in (f"model    runs:/{run_id}/model", f"run      {run_id} (traced, FINISHED)", "(clean)",
                     "data     sst/train: sha256 ", "prepared sst: data/processed/sst md5 ff.dir",
                     "raw      sst: data/raw/sst md5 ee.dir", "train stage inputs"):
        assert expected in out, (expected, out)
    assert "missing" not in out
    if how == "alias":
        assert "model    models:/traced/1 (aliases: champion)" in out


def test_a_run_without_lineage_or_model_names_the_missing_links(in_root, mini_data, checkpoint,  # noqa: F811
                                                                 capsys):
    root, uri, _, _ = in_root
    bare = make_run((root, uri, mini_data[1]), "bare", checkpoint)
    capsys.readouterr()
    assert main(["lineage", str(bare)]) == 1
    out = capsys.readouterr().out
    assert "missing: model: run" in out and "missing: lineage: the run recorded none" in out
    assert main(["lineage", "models:/traced@nobody"]) == 1
    assert "error: models:/traced@nobody: no such model version" in capsys.readouterr().err
