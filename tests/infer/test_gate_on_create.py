"""`deca register --run R --name N --gate-on-create` (infer/gate_on_create.py), for real: runs of the miniature
checkpoint (tests/infer/serve/conftest.py) registered in a local sqlite MLflow store, each new version evaluated by
`deca evaluate` beside the champion on the miniature SST and WOZ validation data, the verdict on its tags.

The versions hold the same weights, so their predictions are the same: a tie, which the superior rule refuses and
the non-inferior rule accepts; the champion never moves. A first version has nothing to be compared with.
"""
from __future__ import annotations

import json

import pytest

from deca.cli import main
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)
from tests.infer.test_mlflow_model import make_run

pytestmark = pytest.mark.slow

NAME = "judged"


@pytest.fixture(scope="module")
def project(tmp_path_factory, mini_data):
    """(root, tracking URI, vocabulary), with a params.yaml evaluating 8 examples of SST and WOZ on the CPU."""
    processed, vocab, _ = mini_data
    root = tmp_path_factory.mktemp("gate-on-create")
    (root / "params.yaml").write_text(json.dumps({
        "data": {"processed_dir": str(processed), "vocab_path": str(vocab)},
        "evaluate": {"tasks": ["sst", "woz.en"], "max_examples": 8, "device": "cpu"},
        "register": {"replicates": 400}}), encoding="utf-8")
    return root, f"sqlite:///{root / 'mlflow.db'}", vocab


def tags(uri: str, version: str) -> dict:
    from deca.metric_logging import client

    return client(uri).get_model_version(NAME, version).tags


def test_a_new_version_is_judged_against_the_champion_on_its_own(project, checkpoint, monkeypatch,  # noqa: F811
                                                                    capsys):
    from deca.metric_logging import client

    root, uri, _ = project
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    runs = {name: str(make_run(project, name, checkpoint)) for name in ("first", "second", "third")}
    assert main(["register", "--run", runs["first"], "--name", NAME, "--gate-on-create"]) == 0
    assert "not compared (nothing else at champion)" in capsys.readouterr().out
    assert tags(uri, "1")["gate.champion.decision"] == "not compared: no version at champion yet"
    assert main(["register", "--name", NAME, "--version", "1", "--alias", "champion"]) == 0

    assert main(["register", "--run", runs["second"], "--name", NAME, "--gate-on-create"]) == 0
    out = capsys.readouterr().out
    assert f"gate: {NAME} version 2 against version 1 at champion: refused: decaScore" in out, out
    second = tags(uri, "2")
    assert second["gate.champion.decision"] == "refused" and second["gate.champion.holder_version"] == "1"
    assert second["gate.champion.decascore"].startswith("+0.00 [+0.00, +0.00]")  # the same weights: a tie
    assert {"gate.champion.sst", "gate.champion.woz.en"} <= set(second)
    judged = root / "eval" / "gate" / f"{NAME}-v2"
    assert (judged / "candidate" / "predictions" / "sst.jsonl").is_file()
    assert (judged / "holder" / "metrics.json").is_file()

    assert main(["register", "--run", runs["third"], "--name", NAME, "--gate-on-create", "champion",
                 "--set", "register.accept=non_inferior"]) == 0
    assert "against version 1 at champion: accepted" in capsys.readouterr().out
    assert tags(uri, "3")["gate.champion.decision"] == "accepted"
    assert str(client(uri).get_model_version_by_alias(NAME, "champion").version) == "1"  # the alias did not move


def test_gate_on_create_without_a_run_is_refused_in_one_line(project, monkeypatch, capsys):
    monkeypatch.chdir(project[0])
    assert main(["register", "--name", NAME, "--version", "1", "--alias", "x", "--gate-on-create"]) == 1
    err = capsys.readouterr().err
    assert "--gate-on-create goes with --run" in err and len(err.strip().splitlines()) == 1, err
