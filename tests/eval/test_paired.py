"""`deca compare --runs-a/--runs-b` (eval/paired.py), the baselines (eval/verdict.py) and per-example
statistics through eval.api.score_task and eval.score.add_intervals."""
from __future__ import annotations

import json

import numpy as np
import pytest

from deca.cli import main
from deca.errors import DataError
from eval import paired
from eval.api import score_task
from eval.verdict import baseline, majority, random_candidate
from eval.score import add_intervals, metrics_document


def write_run(folder, task: str, correct, answers, questions=None, shuffle: int | None = None):
    """A predictions directory as `deca evaluate` writes it: one record per example with its statistics."""
    folder.mkdir(parents=True, exist_ok=True)
    order = list(range(len(correct)))
    if shuffle is not None:
        np.random.default_rng(shuffle).shuffle(order)
    lines = [json.dumps({"id": f"{task}/{i}", "prediction": "x", "answer": answers[i],
                         "question": (questions or [""] * len(answers))[i], "stats": [100.0 * bool(correct[i])]})
             for i in order]
    (folder / f"{task}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def sst_pair(tmp_path, fixes: int = 60, breaks: int = 10, n: int = 800):
    rng = np.random.default_rng(0)
    a = rng.random(n) < 0.8
    b = a.copy()
    b[np.flatnonzero(~a)[:fixes]] = True
    b[np.flatnonzero(a)[:breaks]] = False
    answers = ["positive" if x else "negative" for x in rng.random(n) < 0.55]
    return (write_run(tmp_path / "a", "sst", a, answers),
            write_run(tmp_path / "b", "sst", b, answers, shuffle=1), answers)  # b's file in another order


def test_cli_prints_differences_intervals_p_values_and_verdicts(tmp_path, capsys):
    a, b, answers = sst_pair(tmp_path)
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "500",
                 "--out", str(tmp_path / "cmp")]) == 0
    out = capsys.readouterr().out
    assert "b - a [95%]" in out and "McNemar p" in out
    sst = next(line for line in out.splitlines() if line.startswith("SST"))
    assert "+6.2 [" in sst and sst.rstrip().endswith("reproduced")
    decascore = next(line for line in out.splitlines() if line.startswith("decaScore"))
    assert "+6.2" in decascore and decascore.rstrip().endswith("reproduced")
    doc = json.loads((tmp_path / "cmp.json").read_text())
    assert doc["rows"]["sst"]["mcnemar"] < 1e-6 and doc["rows"]["sst"]["baseline"] == majority(answers)
    assert main(["compare", "--runs-a", str(a), "--runs-b", str(b), "--expect", "lower", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"]["sst"]["verdict"] == "opposite"


def test_a_side_at_its_majority_baseline_is_not_tested(tmp_path):
    answers = ["positive"] * 700 + ["negative"] * 100  # majority EM 87.5
    a = write_run(tmp_path / "a", "sst", np.arange(800) < 700, answers)
    b = write_run(tmp_path / "b", "sst", np.arange(800) < 760, answers)
    row = paired.paired([a], [b], replicates=300)["rows"]["sst"]
    assert row["baseline"] == 87.5 and row["verdict"] == "not tested"


def test_groups_of_seed_runs_and_mismatched_examples(tmp_path):
    rng = np.random.default_rng(2)
    answers = ["positive"] * 400 + ["negative"] * 400
    a = [write_run(tmp_path / f"a{s}", "sst", rng.random(800) < 0.8, answers) for s in range(3)]
    b = [write_run(tmp_path / f"b{s}", "sst", rng.random(800) < 0.8, answers) for s in range(3)]
    row = paired.paired(a, b, replicates=300)["rows"]["sst"]
    assert row["diff"]["low"] < 0 < row["diff"]["high"] and row["verdict"] == "inconclusive"
    short = write_run(tmp_path / "short", "sst", np.ones(799, bool), answers[:799])
    with pytest.raises(DataError, match="other examples"):
        paired.paired(a, [short], replicates=300)


def test_records_without_statistics_name_the_line_and_the_fix(tmp_path, capsys):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "sst.jsonl").write_text('{"id": "1", "prediction": "positive"}\n', encoding="utf-8")
    with pytest.raises(DataError, match="no per-example statistics") as info:
        paired.read_run(folder)
    assert "deca evaluate" in str(info.value)
    assert main(["compare", "--runs-a", str(folder)]) != 0
    assert "error:" in capsys.readouterr().err


def test_baselines_from_the_data():
    assert majority(["positive", "negative", "positive", "positive"]) == 75.0
    questions = ["who was angry? the man or the dog?", "who ran? the cat or the dog?", "what is it? a or b?"]
    assert random_candidate(["the dog", "the cat", "c"], questions) is None  # 2 of 3 name their gold
    assert random_candidate(["the dog", "the cat"], questions[:2]) == 50.0
    assert baseline("schema", ["the dog", "the cat"], questions[:2]) == 50.0
    assert baseline("sst", ["positive", "negative", "negative"]) == pytest.approx(200 / 3)
    assert baseline("squad", ["a", "b"]) is None  # nF1: no floor computed
    assert baseline("multinli.in.out", [str(i) for i in range(50)]) is None  # not a classification


def test_score_task_keeps_statistics_and_intervals_reach_the_metrics_document():
    rows = [{"id": str(i), "answer": a, "answers": [a]} for i, a in enumerate(["positive", "negative"] * 50)]
    preds = {str(i): ("positive" if i % 3 else "negative") for i in range(100)}
    result = score_task("sst", preds, rows, examples=True)
    values = result["examples"]["values"]
    assert values.shape == (100, 1) and values.mean() == pytest.approx(result["headline"]["value"])
    scored = {"split": "validation", "decascore": result["headline"]["value"], "tasks": ["sst"], "partial": True,
              "results": {"sst": {**result, "split": "validation"}}}
    doc = metrics_document(add_intervals(scored, replicates=300))
    low, high = doc["tasks"]["sst"]["interval"]
    assert low < doc["tasks"]["sst"]["headline"] < high and doc["decascore_interval"] == [low, high]
