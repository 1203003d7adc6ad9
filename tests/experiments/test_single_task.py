"""experiments/single_task.py: a run stopped by SIGTERM saves its state, and the same command continues it
to the same curve as a run that was never stopped; a finished run keeps its state, and a longer --iterations
continues it to the curve of a run of that length."""
from __future__ import annotations

import json
import os
import signal

import pytest

from experiments import single_task
from tests.mini_data import build_processed

TINY = ["model.dimension=16", "model.ff_hidden=16", "model.heads=2", "model.transformer_layers=1",
        "model.rnn_layers=1", "model.embedding_dim=16", "model.word_vectors=null", "model.max_generative_vocab=200",
        "model.max_answer_length=8", "train.token_budget=400", "train.lr=0.01", "train.warmup=2",
        "train.max_val_examples=4", "train.val_batch_size=4", "train.seed=3"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("single-task")
    _, _, tasks = build_processed(root)
    if "sst" not in tasks:
        pytest.skip("the sst fixture corpus is missing")
    return root


def command(workdir, out, iterations: int = 6) -> list[str]:
    args = ["run", "--task", "sst", "--iterations", str(iterations), "--val-every", "2", "--workdir", str(workdir),
            "--out", str(out)]
    for kv in TINY:
        args += ["--set", kv]
    return args


def test_a_stopped_run_continues_to_the_same_curve(workdir, tmp_path, monkeypatch):
    from train.recipe import TrainingRecipe

    assert single_task.main(command(workdir, tmp_path / "whole")) == 0
    whole = json.loads((tmp_path / "whole" / "curve.json").read_text())

    step, sent = TrainingRecipe.train_step, []

    def step_then_sigterm(self):
        out = step(self)
        if self.iteration == 3 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGTERM)  # as `timeout` or a scheduler would send it
        return out

    monkeypatch.setattr(TrainingRecipe, "train_step", step_then_sigterm)
    handler = signal.getsignal(signal.SIGTERM)
    assert single_task.main(command(workdir, tmp_path / "split")) == 3
    assert signal.getsignal(signal.SIGTERM) is handler  # the run gives the handlers back
    assert (tmp_path / "split" / "state").is_dir() and not (tmp_path / "split" / "curve.json").exists()
    partial = json.loads((tmp_path / "split" / "curve.partial.json").read_text())
    assert [p["iteration"] for p in partial["curve"]] == [2]

    monkeypatch.setattr(TrainingRecipe, "train_step", step)
    assert single_task.main(command(workdir, tmp_path / "split")) == 0
    split = json.loads((tmp_path / "split" / "curve.json").read_text())
    assert [(s["from_iteration"], s["to_iteration"]) for s in split["segments"]] == [(0, 3), (3, 6)]
    assert [p["iteration"] for p in split["curve"]] == [2, 4, 6]
    assert [p["headline"] for p in split["curve"]] == [p["headline"] for p in whole["curve"]]
    # the mean training loss of iterations 5-6: the same weights, data order and dropout as the whole run's
    # (at 4 the continued run's window holds iteration 4 alone)
    assert split["curve"][-1]["loss"] == pytest.approx(whole["curve"][-1]["loss"], rel=1e-5)
    assert (tmp_path / "split" / "state").is_dir() and not (tmp_path / "split" / "curve.partial.json").exists()
    # the best round per example, kept across the stop: its metric is the curve's best headline
    from experiments.results import examples

    for run, curve in (("whole", whole), ("split", split)):
        kept = examples.read(tmp_path / run / examples.FILE)["tasks"]["sst"]
        assert kept["clusters"] is None  # SST: independent sentences
        assert kept["headline"] == pytest.approx(max(p["headline"] for p in curve["curve"]), abs=1e-3)


def test_a_finished_run_continues_to_a_longer_budget_as_one_run_of_that_length(workdir, tmp_path, capsys):
    """The plan doubles a budget whose curve still rose: the finished run goes on from its kept state (the rate
    depends on the step only), and asked again at its length it has nothing to do."""
    assert single_task.main(command(workdir, tmp_path / "whole")) == 0
    whole = json.loads((tmp_path / "whole" / "curve.json").read_text())
    assert single_task.main(command(workdir, tmp_path / "grown", iterations=4)) == 0
    assert json.loads((tmp_path / "grown" / "curve.json").read_text())["iterations"] == 4
    assert single_task.main(command(workdir, tmp_path / "grown")) == 0
    grown = json.loads((tmp_path / "grown" / "curve.json").read_text())
    assert grown["iterations"] == 6
    assert [(s["from_iteration"], s["to_iteration"]) for s in grown["segments"]] == [(0, 4), (4, 6)]
    assert [p["iteration"] for p in grown["curve"]] == [2, 4, 6]
    assert [p["headline"] for p in grown["curve"]] == [p["headline"] for p in whole["curve"]]
    assert grown["curve"][-1]["loss"] == pytest.approx(whole["curve"][-1]["loss"], rel=1e-5)
    capsys.readouterr()
    assert single_task.main(command(workdir, tmp_path / "grown", iterations=4)) == 0
    assert "finished at 6 iterations (asked 4): nothing to do" in capsys.readouterr().out


def test_an_unreadable_curve_ends_in_one_message_naming_it(tmp_path):
    (tmp_path / "curve.json").write_text("{not json")
    with pytest.raises(SystemExit, match=r"curve.json: not a finished run's curve .*move it aside"):
        single_task.finished_at(tmp_path)
