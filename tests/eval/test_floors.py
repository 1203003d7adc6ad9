"""eval/floors.py: every trivial answerer scored by the task's official metric, and the strongest of them."""
from __future__ import annotations

import dataclasses

import pytest

from deca.registry import Example
from deca.tasks import sst
from eval import floors
from tests.conftest import shared_file


def rows(answers, contexts=None, questions=None):
    return [{"id": str(i), "answer": a, "answers": [a], "context": (contexts or ["x"] * len(answers))[i],
             "question": (questions or ["is it?"] * len(answers))[i]} for i, a in enumerate(answers)]


def test_a_classifier_s_floor_is_its_majority_label():
    found = floors.floors("sst", rows(["positive", "positive", "positive", "negative", "negative"]))
    assert found["constant answer"] == pytest.approx(60.0) and found["empty answer"] == 0.0
    assert "random candidate" not in found  # the questions name no candidates
    assert floors.strongest("sst", rows(["positive", "negative", "negative"])) == ("constant answer",
                                                                                  pytest.approx(200 / 3))


def test_two_named_candidates_give_the_random_candidate_floor():
    golds = ["paul", "george", "paul", "george"]
    qs = ["who was hungry? paul or george?"] * 4
    found = floors.floors("schema", rows(golds, questions=qs))
    assert found["random candidate"] == pytest.approx(50.0) and found["constant answer"] == pytest.approx(50.0)
    golds = ["paul", "george", "ringo", "john"]  # every answer different: the constant answer gets one in four
    found = floors.floors("schema", rows(golds, questions=[f"who? {g} or yoko?" for g in golds]))
    assert floors.strongest("schema", rows(golds, questions=[f"who? {g} or yoko?" for g in golds])) == (
        "random candidate", pytest.approx(50.0))
    assert found["constant answer"] == pytest.approx(25.0)


def test_lead_sentences_are_scored_by_the_task_s_own_metric():
    contexts = ["the cat sat on the mat. it was warm. the dog came. then it rained.",
                "stocks rose today. investors cheered. bonds fell. the end."]
    answers = ["the cat sat on the mat . it was warm .", "stocks rose today . investors cheered ."]
    found = floors.floors("cnn_dailymail", rows(answers, contexts=contexts))
    assert found["empty answer"] == 0.0
    assert found["first sentence"] > 0 and found["lead-3"] > found["empty answer"]
    assert floors.strongest("cnn_dailymail", rows(answers, contexts=contexts))[0] in ("first sentence", "lead-3",
                                                                                     "copy the context")


def test_no_rows_is_an_error_naming_the_task():
    with pytest.raises(ValueError, match="sst"):
        floors.floors("sst", [])


def test_real_sst_validation_floor_is_its_majority_label():
    """The real SST development set (872 reviews): the strongest floor is always answering its most frequent
    label, 444 of 872 (the record docs/results/records/baselines.json says 50.92 from the prepared split)."""
    path = shared_file("sst/dev_binary_sent.csv")
    examples = [e for e in sst.read("validation", [path], None) if isinstance(e, Example)]
    data = [{**dataclasses.asdict(e), "answers": [e.answer]} for e in examples]
    label, value = floors.strongest("sst", data)
    assert len(data) == 872 and label == "constant answer" and value == pytest.approx(100 * 444 / 872)
