"""Corpus F1 for QA-ZRE (decaNLP's `computeCF1`, a port of the UW zero-shot RE `evaluate.py`).

Inputs are the SQuAD-normalized prediction and golds (`squad.normalize_text`), as in decaNLP.
Each is simplified to a *set* of words: lowercased, punctuation stripped per token, and
{the, a, an, and, ''} removed; the gold set of an example is the union of the sets of all its golds.
Per example: a true positive when the sets are equal and the gold is not exactly {unanswerable}; a
true negative when equal and the gold is {unanswerable}; a system positive when the prediction is not
exactly {unanswerable}; a real positive when the gold is not. P = tp/sys_pos, R = tp/real_pos,
F = 2PR/(P+R), all 0 when tp is 0. So `unanswerable` is never counted as a positive prediction, and
word order and duplicated words do not matter.
"""
from __future__ import annotations

import string
from typing import Sequence

import numpy as np

from eval.metrics.squad import normalize_text

UNANSWERABLE = "unanswerable"
_STOP = frozenset({"the", "a", "an", "and", ""})
_PUNCT = frozenset(string.punctuation)


def simplify(text: str) -> frozenset[str]:
    """The word set the UW evaluation compares."""
    return frozenset("".join(c for c in t if c not in _PUNCT) for t in text.strip().lower().split()) - _STOP


def counts(prediction: str, golds: Sequence[str]) -> tuple[int, int, int, int]:
    """(tp, tn, sys_pos, real_pos) of one example (inputs already normalized)."""
    gold = frozenset().union(*(simplify(g) for g in golds))  # no gold at all -> the empty set
    answer = simplify(prediction)
    gold_null = gold == {UNANSWERABLE}
    tp = tn = 0
    if answer == gold:
        if gold_null:
            tn = 1
        else:
            tp = 1
    sys_pos = int(answer != {UNANSWERABLE})
    real_pos = int(not gold_null)
    return tp, tn, sys_pos, real_pos


def example_counts(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> list[tuple[int, int, int]]:
    """(tp, sys_pos, real_pos) of every example after SQuAD normalization: the corpus F1's statistics."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    if not predictions:
        raise ValueError("no examples to score")
    out = []
    for prediction, gold in zip(predictions, golds):
        tp, _, sys_pos, real_pos = counts(normalize_text(prediction), [normalize_text(g) for g in gold])
        out.append((tp, sys_pos, real_pos))
    return out


def f1_from_counts(tp, sys_pos, real_pos):
    """Corpus F1 (×100) from summed counts; numpy arrays give one F1 per element (0 where tp is 0)."""
    tp, sys_pos, real_pos = (np.asarray(x, dtype=float) for x in (tp, sys_pos, real_pos))
    with np.errstate(divide="ignore", invalid="ignore"):
        f = 200.0 * tp / (sys_pos + real_pos)  # 2PR/(P+R) with P = tp/sys_pos, R = tp/real_pos
    return np.where(tp > 0, f, 0.0)


def corpus_f1(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """corpus_f1, precision and recall (×100) over the corpus, after SQuAD normalization."""
    tp = sys_pos = real_pos = 0
    for e_tp, e_sys, e_real in example_counts(predictions, golds):
        tp, sys_pos, real_pos = tp + e_tp, sys_pos + e_sys, real_pos + e_real
    if tp == 0:
        p = r = f = 0.0
    else:
        p = tp / sys_pos
        r = tp / real_pos
        f = 2 * p * r / (p + r)
    return {"corpus_f1": 100.0 * f, "precision": 100.0 * p, "recall": 100.0 * r}
