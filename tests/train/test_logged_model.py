"""Every finished `deca train` run logs its best model as an MLflow model, and records its lineage (slow).

A tiny MQAN trained for a few iterations on the miniature SST data (in Ray Train's local mode: no worker
process is what these tests are about), in a git project, with
train.register_model unset: the run's MLflow run holds the pyfunc model runs:/<id>/model, which answers
exactly as `deca predict --run` does; nothing is registered; the run carries its lineage tags and dataset
inputs, and `deca lineage` follows the chain from the run folder.
"""
from __future__ import annotations

import dataclasses

import pandas as pd
import pytest

from deca.cli import main
from deca.config import ModelConfig, Params, TrainConfig
from tests.deca.test_lineage import project as git_project
from tests.infer.test_mlflow_model import REQUESTS, deca_predict

pytestmark = pytest.mark.slow


def rewrite_pipeline_outputs(root) -> None:
    """What `make run` does before `train` starts: dvc.lock and the tracked eval/ outputs rewritten."""
    lock = root / "dvc.lock"
    lock.write_text(lock.read_text().replace("aa.dir", "an-earlier-stage.dir"), encoding="utf-8")
    (root / "eval" / "metrics.json").write_text('{"decascore": 1.0}', encoding="utf-8")


@pytest.fixture(scope="module")
def trained(mini_data, tmp_path_factory):
    """(project root, tracking URI, Outcome) of a finished four-iteration run, trained as `make run` trains:
    dvc.lock and eval/ rewritten since the commit (its lineage is still clean)."""
    from train.driver import fit

    processed, vocab, tasks = mini_data
    root = git_project(tmp_path_factory.mktemp("logged"))
    rewrite_pipeline_outputs(root)
    uri = f"sqlite:///{root}/mlflow.db"
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    params.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1,
                               dropout=0.1, embedding_dim=16, max_generative_vocab=200, max_answer_length=12)
    params.train = TrainConfig(tasks=["sst"], iterations=4, token_budget=800, lr=1e-2, warmup=2, val_every=4,
                               save_every=4, log_every=1, val_batch_size=8, num_workers=0, max_failures=0, seed=7,
                               storage_dir=str(root / "checkpoints"), experiment="logged")
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    mp.chdir(root)
    try:
        outcome = fit(params, run_name="logged", progress=False, project=root)
    finally:
        mp.undo()
    return root, uri, outcome


@pytest.fixture
def in_project(trained, monkeypatch):
    import mlflow

    root, uri, _ = trained
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)
    yield trained
    mlflow.set_tracking_uri(before)


def test_the_run_model_answers_as_deca_predict_and_is_not_registered(in_project, tmp_path, capsys):
    import mlflow
    from mlflow import MlflowClient

    _, uri, outcome = in_project
    assert outcome.best is not None
    expected = deca_predict(["--run", str(outcome.run_dir)], tmp_path, capsys)
    model = mlflow.pyfunc.load_model(f"runs:/{outcome.mlflow_run_id}/model", model_config={"device": "cpu"})
    assert model.predict(pd.DataFrame(REQUESTS)).to_dict("records") == expected
    assert MlflowClient(tracking_uri=uri).search_registered_models() == []


def test_the_run_records_its_lineage_and_deca_lineage_follows_it(in_project, capsys):
    from deca.metric_logging import client

    _, uri, outcome = in_project
    tags = client(uri).get_run(outcome.mlflow_run_id).data.tags
    assert tags["lineage.seed"] == "7" and tags["lineage.dirty"] == "false" and len(tags["lineage.commit"]) == 40
    assert tags["lineage.vectors.word_vectors"] != "none" and tags["lineage.version.torch"] != "none"
    assert tags["lineage.data.sst/train"] != "none" and tags["lineage.data.sst/validation"] != "none"
    capsys.readouterr()
    main(["lineage", str(outcome.run_dir)])
    out = capsys.readouterr().out
    assert f"model    runs:/{outcome.mlflow_run_id}/model" in out and "data     sst/train: sha256" in out
    assert "prepared sst: data/processed/sst md5 ff.dir" in out  # the project's dvc.lock
