"""score_task and decascore: the contract of eval/api.py."""
from __future__ import annotations

import pytest

from tests.support import row
from deca.registry import DECANLP
from eval.api import PredictionMismatch, decascore, score_task


def _sst_rows():
    return [row("sst", "validation", f"dev-{i}", a) for i, a in enumerate(["positive", "negative", "positive"])]


def test_score_task_contract_and_lowercasing():
    result = score_task("sst", {"dev-0": "Positive", "dev-1": "negative", "dev-2": "negative"}, _sst_rows())
    assert result["task"] == "sst" and result["n"] == 3
    assert result["headline"] == {"name": "em", "value": pytest.approx(200 / 3)}
    assert set(result["metrics"]) == {"em", "nem", "nf1"}


def test_missing_and_unknown_ids_give_counts_and_examples():
    preds = {"dev-0": "positive", "x-1": "a", "x-2": "b"}
    with pytest.raises(PredictionMismatch) as err:
        score_task("sst", preds, _sst_rows())
    text = str(err.value)
    assert "2 of 3 gold ids have no prediction" in text and "'dev-1'" in text
    assert "2 predicted ids are not in the gold" in text and "'x-1'" in text
    assert err.value.missing == ["dev-1", "dev-2"]


def test_many_missing_ids_are_shortened():
    rows = [row("sst", "validation", f"dev-{i}", "positive") for i in range(20)]
    with pytest.raises(PredictionMismatch, match=r"20 of 20 .*\.\.\."):
        score_task("sst", {}, rows)


def test_gold_json_strings_are_parsed():
    gold = {"dialogue_id": "en_0", "turn": 0, "state": {"food": "thai"}, "requests": []}
    rows = [row("woz.en", "validation", "en_0_0", "food: thai;", gold=gold)]
    result = score_task("woz.en", {"en_0_0": "FOOD: Thai;"}, rows, headline="joint_goal_em")
    assert result["headline"]["value"] == 100.0


def test_duplicate_gold_ids_and_empty_gold():
    rows = _sst_rows() + [row("sst", "validation", "dev-0", "positive")]
    with pytest.raises(ValueError, match="duplicated gold ids"):
        score_task("sst", {}, rows)
    with pytest.raises(ValueError, match="no gold rows"):
        score_task("sst", {}, [])


def _result(task, name, value):
    return {"task": task, "n": 1, "metrics": {name: value}, "headline": {"name": name, "value": value}}


def test_decascore_sums_the_ten_headlines():
    from deca.registry import all_tasks

    tasks = all_tasks()
    per_task = {}
    for i, t in enumerate(DECANLP):
        name = tasks[t].metric if t in tasks else "em"
        per_task[t] = _result(t, name, 10.0 + i)
    out = decascore(per_task)
    assert out["decascore"] == pytest.approx(sum(10.0 + i for i in range(10)))
    assert out["tasks"] == list(DECANLP) and out["partial"] is False and out["missing"] == []
    assert out["max"] == 1000.0


def test_partial_decascore_says_so_and_ignores_extra_tasks():
    per_task = {"sst": _result("sst", "em", 80.0), "snli": _result("snli", "em", 50.0)}
    out = decascore(per_task)
    assert out["decascore"] == 80.0 and out["tasks"] == ["sst"] and out["partial"] is True
    assert "squad" in out["missing"] and out["not_counted"] == ["snli"]


def test_decascore_rejects_a_headline_other_than_the_registry():
    with pytest.raises(ValueError, match="declares 'em'"):
        decascore({"sst": _result("sst", "nf1", 80.0)})
