"""Compare answers as `deca predict` writes them ({id, answer, tokens: [{token, source, weights, probability}]}):
the same text exactly, the numbers within a tolerance.

Float sums depend on the batch's shape (padding, which rows share it) and the CPU's kernels: the same request
answered alone and among four gave probability 0.56968 and 0.569681 on an AMD CPU. Ids, answers, tokens and
sources must still be equal; probabilities and source weights (rounded to 6 digits) may differ by TOL.
"""
from __future__ import annotations

import pytest

# 100 x the last rounded digit: far above the batch-shape noise (1e-6), far below any real change of the model
TOL = 1e-4


def texts(answers: list[dict]) -> list[tuple]:
    """(id, answer, [(token, source)]) of each answer: what must be equal exactly."""
    return [(a.get("id"), a["answer"], [(s["token"], s["source"]) for s in a["tokens"]]) for a in answers]


def numbers(answers: list[dict]) -> list[list[tuple[float, dict]]]:
    """(probability, weights) of each token of each answer: what may differ by `tol`."""
    return [[(s["probability"], s["weights"]) for s in a["tokens"]] for a in answers]


def assert_same_answers(got: list[dict], expected: list[dict], tol: float = TOL) -> None:
    """Same ids, answers, tokens and sources, in order; probabilities and weights equal up to `tol` (absolute)."""
    assert texts(got) == texts(expected)
    for i, (mine, theirs) in enumerate(zip(numbers(got), numbers(expected))):
        for step, ((p, w), (q, v)) in enumerate(zip(mine, theirs)):
            assert p == pytest.approx(q, abs=tol), f"answer {i}, token {step}: probability {p} vs {q}"
            assert w == pytest.approx(v, abs=tol), f"answer {i}, token {step}: weights {w} vs {v}"


def same_answers(got: list[dict], expected: list[dict], tol: float = TOL) -> bool:
    """assert_same_answers as a predicate."""
    try:
        assert_same_answers(got, expected, tol)
    except AssertionError:
        return False
    return True
