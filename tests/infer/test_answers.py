"""tests/infer/answers.py: the same text exactly, the numbers within TOL."""
from __future__ import annotations

import copy

import pytest

from tests.infer.answers import TOL, assert_same_answers, same_answers

ANSWER = {"id": "a", "answer": "positive", "tokens": [
    {"token": "positive", "source": "question", "weights": {"vocabulary": 0.1, "context": 0.3, "question": 0.6},
     "probability": 0.569681}]}


def changed(path: tuple, value) -> list[dict]:
    """[ANSWER] with the value at `path` (keys into the answer) replaced."""
    answer = copy.deepcopy(ANSWER)
    target = answer
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return [answer]


def test_the_last_digits_may_differ_and_nothing_else():
    assert_same_answers(changed(("tokens", 0, "probability"), 0.56968), [ANSWER])  # AMD, alone vs among four
    assert same_answers(changed(("tokens", 0, "weights", "context"), 0.300004), [ANSWER])
    assert not same_answers(changed(("tokens", 0, "probability"), 0.569681 + 2 * TOL), [ANSWER])
    assert not same_answers(changed(("tokens", 0, "weights", "question"), 0.61), [ANSWER])
    for path, value in ((("id",), "b"), (("answer",), "negative"), (("tokens", 0, "token"), "negative"),
                        (("tokens", 0, "source"), "context"), (("tokens",), [])):
        assert not same_answers(changed(path, value), [ANSWER]), path
    assert not same_answers([ANSWER, ANSWER], [ANSWER])
    with pytest.raises(AssertionError, match="answer 0, token 0: probability 0.6"):
        assert_same_answers(changed(("tokens", 0, "probability"), 0.6), [ANSWER])
