"""Gated promotion (infer/promotion.py, `deca register --version --alias` with predictions), for real.

Two versions of one registered model (the miniature model's run, registered twice) in a sqlite store;
version 1 is champion. Synthetic `deca evaluate` predictions stand for each version's evaluation: the
champion plus noise and a candidate worse on one task beyond its margin are refused (the alias stays, one
error line names the decaScore or the task with its interval, the evidence is on the version); a clearly
better candidate moves the alias and its evidence is in the candidate's run.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from deca.cli import main
from tests.eval.test_gate import TASKS, ZERO_SHOT, changed, holder_correct, write
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)
from infer.evaluate import MODEL_FILE, made_by
from tests.infer.test_mlflow_model import make_run

NAME = "gated"


@pytest.fixture(scope="module")
def store(tmp_path_factory, mini_data, checkpoint):  # noqa: F811
    """(root, uri, run id): versions 1 (champion) and 2 of NAME, and a params file gating champion."""
    root = tmp_path_factory.mktemp("promotion")
    uri = f"sqlite:///{root / 'mlflow.db'}"
    run_dir = make_run((root, uri, mini_data[1]), "candidate", checkpoint)
    (root / "params.yaml").write_text("register:\n  gated: [champion]\n  replicates: 400\n", encoding="utf-8")
    mp = pytest.MonkeyPatch()
    mp.chdir(root)
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    try:
        assert main(["register", "--run", str(run_dir), "--name", NAME, "--alias", "champion"]) == 1  # gated
        assert main(["register", "--run", str(run_dir), "--name", NAME]) == 0
        assert main(["register", "--name", NAME, "--version", "1", "--alias", "champion"]) == 0  # no holder yet
        assert main(["register", "--run", str(run_dir), "--name", NAME]) == 0
    finally:
        mp.undo()
    return root, uri, json.loads((run_dir / "deca_run.json").read_text())["mlflow_run_id"], checkpoint


@pytest.fixture
def predictions(store, monkeypatch, tmp_path):
    """{side: a predictions directory}, each saying (model.json) that the versions' checkpoint made it."""
    root, uri, _, model = store
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    correct = {t: holder_correct(k) for k, t in enumerate(TASKS)}
    sides = {"holder": correct,
             "noisy": {t: changed(c, 30, 30, seed=9) for t, c in correct.items()},
             "better": {t: changed(c, 80, 5, seed=3) for t, c in correct.items()},
             "mixed": {"sst": changed(correct["sst"], 150, 0, seed=4),
                       "multinli.in.out": changed(correct["multinli.in.out"], 0, 40, seed=5)}}
    folders = {side: write(tmp_path / side, values) for side, values in sides.items()}
    for folder in folders.values():
        (folder / MODEL_FILE).write_text(json.dumps(made_by(model)), encoding="utf-8")
    return {side: str(folder) for side, folder in folders.items()}


def promote(candidate: str, holder: str) -> int:
    return main(["register", "--name", NAME, "--version", "2", "--alias", "champion",
                 "--candidate-predictions", candidate, "--holder-predictions", holder])


def version_tags(uri: str, version: str) -> dict:
    from deca.metric_logging import client

    return client(uri).get_model_version(NAME, version).tags


def champion(uri: str) -> str:
    from deca.metric_logging import client

    return str(client(uri).get_model_version_by_alias(NAME, "champion").version)


def test_a_gated_alias_needs_the_evidence(store, predictions, capsys):
    assert main(["register", "--name", NAME, "--version", "2", "--alias", "champion"]) == 1
    assert "models:/gated@champion is gated: give --candidate-predictions DIR" in capsys.readouterr().err


def test_the_champion_plus_noise_is_refused(store, predictions, capsys):
    _, uri, _, _ = store
    assert promote(predictions["noisy"], predictions["holder"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: models:/gated@champion stays on version 1, version 2 "
                                               "refused: ")
    assert "decaScore: candidate - holder = +0.00 [95% " in err[0]
    assert champion(uri) == "1"
    tags = version_tags(uri, "2")
    assert tags["gate.champion.decision"] == "refused" and tags["gate.champion.holder_version"] == "1"
    assert tags["gate.champion.decascore"].startswith("+0.00 [") and "margin 1" in tags["gate.champion.sst"]


def test_a_candidate_worse_on_one_task_beyond_its_margin_is_refused(store, predictions, capsys):
    _, uri, _, _ = store
    assert promote(predictions["mixed"], predictions["holder"]) == 1
    err = capsys.readouterr().err
    assert "version 2 refused: task MNLI (multinli.in.out): candidate - holder = -4.00 [95% " in err
    assert "decaScore" not in err and champion(uri) == "1"


def test_a_clearly_better_candidate_moves_the_alias_with_its_evidence(store, predictions, capsys):
    from deca.metric_logging import client

    _, uri, run_id, _ = store
    assert promote(predictions["better"], predictions["holder"]) == 0
    out = capsys.readouterr().out
    assert "gate: accepted (decaScore gain +15.00 [95% +" in out and "alias champion -> gated version 2" in out
    assert champion(uri) == "2" and version_tags(uri, "2")["gate.champion.decision"] == "accepted"
    local = client(uri).download_artifacts(run_id, "gate/champion-v2-vs-v1.json")
    found = json.loads(open(local, encoding="utf-8").read())
    assert found["accepted"] and found["holder_version"] == "1" and set(found["rows"]) == {*TASKS, "decascore"}
    assert np.isclose(found["rows"]["sst"]["diff"]["value"], 7.5)


def test_predictions_another_model_made_are_refused_naming_the_file(store, predictions, tmp_path, capsys):
    from deca.metric_logging import client

    root, uri, _, model = store
    client(uri).set_registered_model_alias(NAME, "champion", "1")  # as before any test moved it
    other = tmp_path / "other.pt"
    other.write_bytes(model.read_bytes() + b"another model")
    made = Path(predictions["better"]) / MODEL_FILE
    made.write_text(json.dumps(made_by(other)), encoding="utf-8")
    assert promote(predictions["better"], predictions["holder"]) == 1
    err = capsys.readouterr().err
    assert f"{made}: these predictions were made by another model than version 2 of {NAME}" in err
    made.write_text("{not json", encoding="utf-8")
    assert promote(predictions["better"], predictions["holder"]) == 1
    assert f"{made}: not the JSON object `deca evaluate` writes" in capsys.readouterr().err
    made.unlink()
    assert promote(predictions["better"], predictions["holder"]) == 1
    assert f"{made}: missing: nothing says which model made these predictions" in capsys.readouterr().err
    assert champion(uri) == "1"


@pytest.mark.parametrize("value, expect", [
    ("replicates: 0", "register.replicates = 0: must be between 200 "),
    ("replicates: 100000000", "register.replicates = 100000000: must be between 200 "),
    ("accept: non-inferior", "register.accept = 'non-inferior': must be one of superior, non_inferior"),
])
def test_bad_register_params_are_one_line_naming_the_key(tmp_path, monkeypatch, capsys, value, expect):
    """Issue 42: register.replicates 0 ended in a 31-line traceback (before any model store is opened now)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text(f"register:\n  gated: [champion]\n  {value}\n", encoding="utf-8")
    assert main(["register", "--name", NAME, "--version", "2", "--alias", "champion", "--candidate-predictions",
                 "c", "--holder-predictions", "h"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: params.yaml:3: {expect}")


def test_a_tie_outside_the_decascore_does_not_move_the_alias(store, predictions, tmp_path, capsys):
    """Issue 42: identical models evaluated only on zero-shot tasks moved champion from version 1 to 2 on +0.00."""
    from deca.metric_logging import client

    _, uri, _, model = store
    client(uri).set_registered_model_alias(NAME, "champion", "1")  # as before any test moved it
    same = write(tmp_path / "zero_shot", {t: holder_correct(k) for k, t in enumerate(ZERO_SHOT)})
    (same / MODEL_FILE).write_text(json.dumps(made_by(model)), encoding="utf-8")
    assert promote(str(same), str(same)) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: {same}: no task the gate can judge: both sides were evaluated only on amazon, snli, "
                   "outside the decaScore, and register.accept superior promotes on a decaScore gain (evaluate "
                   "both on decaNLP tasks, or set register.accept: non_inferior)"]
    assert champion(uri) == "1"
