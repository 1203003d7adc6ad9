"""eval/floors.py: every trivial answerer scored by the task's official metric, and the strongest of them, on
planted row sets whose every floor is known."""
from __future__ import annotations

import dataclasses
import json
import random

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
    assert "random candidate" not in found and "first candidate" not in found  # the questions name none
    assert floors.strongest("sst", rows(["positive", "negative", "negative"])) == ("constant answer",
                                                                                  pytest.approx(200 / 3))


def test_majority_and_random_candidate_differ_and_the_higher_counts():
    """SST's question names both labels: 3 of 5 positive gives majority 60, random 50, first candidate
    ("negative", named first) 40: the floor is the majority."""
    golds = ["positive", "positive", "positive", "negative", "negative"]
    found = floors.floors("sst", rows(golds, questions=["is this review negative or positive?"] * 5))
    assert found == {**found, "constant answer": pytest.approx(60.0), "random candidate": pytest.approx(50.0),
                     "first candidate": pytest.approx(40.0)}
    assert floors.highest(found) == ("constant answer", pytest.approx(60.0))
    golds = ["negative", "negative", "positive", "positive"]  # a tie 50 / 50 / 50: the first listed
    assert floors.strongest("sst", rows(golds, questions=["negative or positive?"] * 4))[1] == pytest.approx(50.0)


def test_mwsc_first_candidate_and_random_candidate():
    golds = ["paul", "george", "paul", "george"]
    qs = ["who was hungry? paul or george?"] * 4
    found = floors.floors("schema", rows(golds, questions=qs))
    assert found["random candidate"] == pytest.approx(50.0) and found["constant answer"] == pytest.approx(50.0)
    assert found["first candidate"] == pytest.approx(50.0)
    golds = ["paul", "george", "ringo", "john"]  # the gold always named first: first candidate 100
    qs = [f"who ran? {g} or yoko?" for g in golds]
    found = floors.floors("schema", rows(golds, questions=qs))
    assert found["constant answer"] == pytest.approx(25.0) and found["first candidate"] == pytest.approx(100.0)
    assert floors.strongest("schema", rows(golds, questions=qs)) == ("first candidate", pytest.approx(100.0))


@pytest.mark.parametrize("question, first", [("Who is hurt? Bob or Charlie?", "Bob"),
                                             ("Is this review negative or positive?", "negative"),
                                             ("Who won? the old man or the boy?", "the old man"),
                                             ("what is it?", ""), ("a or b", "")])
def test_first_candidate_of_a_question(question, first):
    assert floors.first_candidate(question) == first


def woz_rows(order_seed: int = 0):
    """Three planted dialogues: (answer, cumulative state) per turn. Only d2's first turn has an empty state (a
    greeting): 'no change of state' ("none" throughout, the state stays empty) is right there alone, 1 of 6."""
    dialogues = {"d0": [("food: thai;", {"food": "thai"}), ("none", {"food": "thai"}),
                        ("area: north;", {"food": "thai", "area": "north"})],
                 "d1": [("area: west;", {"area": "west"}), ("none", {"area": "west"})],
                 "d2": [("none", {})]}
    found = [{"id": f"{d}_{t}", "context": "hi", "question": "What is the change in state?", "answer": a,
              "answers": [a], "gold": json.dumps({"dialogue_id": d, "turn": t, "state": s, "requests": []})}
             for d, turns in dialogues.items() for t, (a, s) in enumerate(turns)]
    random.Random(order_seed).shuffle(found)
    return found


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_woz_no_change_of_state_keeps_the_state_empty(seed):
    found = floors.floors("woz.en", woz_rows(seed))
    assert found["no change of state"] == pytest.approx(100 / 6)
    assert found["constant answer"] == pytest.approx(100 / 6)  # "none" is also the most frequent answer


def test_translation_copies_the_source():
    sources = ["ein kleiner test satz hier", "das ist ein anderer satz"]
    found = floors.floors("iwslt.en.de", rows(list(sources), contexts=sources))
    assert "copy the context" not in found and found["copy the source"] == pytest.approx(100.0)
    assert found["empty answer"] == 0.0


def test_nf1_floors_copy_the_context_and_its_first_sentence():
    contexts = ["the red fox ran. it was fast. then it slept.", "a dog barked. the end."]
    answers = ["the red fox ran .", "a dog barked ."]
    found = floors.floors("squad", rows(answers, contexts=contexts))
    assert found["first sentence"] == pytest.approx(100.0)  # nF1 ignores the final period
    assert 0 < found["copy the context"] < found["first sentence"] and found["empty answer"] == 0.0
    assert floors.strongest("squad", rows(answers, contexts=contexts))[0] == "first sentence"


def test_lead_sentences_are_scored_by_the_task_s_own_metric():
    contexts = ["the cat sat on the mat. it was warm. the dog came. then it rained.",
                "stocks rose today. investors cheered. bonds fell. the end."]
    answers = ["the cat sat on the mat . it was warm .", "stocks rose today . investors cheered ."]
    found = floors.floors("cnn_dailymail", rows(answers, contexts=contexts))
    assert found["empty answer"] == 0.0
    assert found["first sentence"] > 0 and found["lead-3"] > found["empty answer"]


def test_no_rows_is_an_error_naming_the_task():
    with pytest.raises(ValueError, match="sst"):
        floors.floors("sst", [])
    with pytest.raises(ValueError, match="no floors"):
        floors.highest({})


def test_real_sst_validation_floor_is_its_majority_label():
    """The real SST development set (872 reviews): the strongest floor is always answering its most frequent
    label, 444 of 872, above the random candidate's 50.0."""
    path = shared_file("sst/dev_binary_sent.csv")
    examples = [e for e in sst.read("validation", [path], None) if isinstance(e, Example)]
    data = [{**dataclasses.asdict(e), "answers": [e.answer]} for e in examples]
    label, value = floors.strongest("sst", data)
    assert len(data) == 872 and label == "constant answer" and value == pytest.approx(100 * 444 / 872)
