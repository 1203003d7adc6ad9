"""EM, nEM and nF1: exact match and the SQuAD v1.1 normalized metrics (decaNLP `metrics.py`).

`normalize_text` is the official SQuAD v1.1 `normalize_answer`: lowercase, remove every character of
`string.punctuation`, remove the articles a/an/the as whole words, collapse whitespace. nF1 is the
bag-of-tokens F1 (multiset overlap), nEM the exact match of normalized strings; both take the maximum
over all gold answers of an example and are averaged over examples. A prediction with no token in common
with a gold (including an empty prediction or an empty normalized gold) scores 0, as in SQuAD v1.1.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Callable, Sequence

_PUNCT = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_text(text: str) -> str:
    """SQuAD v1.1 answer normalization (lowercase, no punctuation, no articles, single spaces)."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", text).split())


def f1_score(prediction: str, gold: str) -> float:
    """Bag-of-tokens F1 between two (already normalized) strings, in 0..1."""
    pred_tokens = prediction.split()
    gold_tokens = gold.split()
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(prediction == gold)


def max_over_golds(metric: Callable[[str, str], float], prediction: str, golds: Sequence[str]) -> float:
    """The best score of `prediction` against any gold; 0 when there is no gold at all."""
    return max((metric(prediction, g) for g in golds), default=0.0)


def _average(metric: Callable[[str, str], float], predictions: Sequence[str],
             golds: Sequence[Sequence[str]]) -> float:
    _check_lengths(predictions, golds)
    total = 0.0
    for prediction, gold in zip(predictions, golds):
        total += max_over_golds(metric, prediction, gold)
    # 100 * sum / n, in the order the official SQuAD v1.1 script uses.
    return 100.0 * total / len(predictions)


def em(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> float:
    """Exact string match (max over golds), ×100. Inputs are compared as given (lowercased upstream)."""
    return _average(exact_match, predictions, golds)


def nem(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> float:
    """Exact match after SQuAD normalization, ×100."""
    return _average(exact_match, [normalize_text(p) for p in predictions],
                    [[normalize_text(g) for g in gs] for gs in golds])


def nf1(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> float:
    """Bag-of-tokens F1 after SQuAD normalization (max over golds), ×100."""
    return _average(f1_score, [normalize_text(p) for p in predictions],
                    [[normalize_text(g) for g in gs] for gs in golds])


def per_example(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, list[float]]:
    """em, nem and nf1 of every example (×100, max over its golds): the averages `squad_metrics` reports."""
    _check_lengths(predictions, golds)
    norm_pred = [normalize_text(p) for p in predictions]
    norm_gold = [[normalize_text(g) for g in gs] for gs in golds]
    return {
        "em": [100.0 * max_over_golds(exact_match, p, g) for p, g in zip(predictions, golds)],
        "nem": [100.0 * max_over_golds(exact_match, p, g) for p, g in zip(norm_pred, norm_gold)],
        "nf1": [100.0 * max_over_golds(f1_score, p, g) for p, g in zip(norm_pred, norm_gold)],
    }


def squad_metrics(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> dict[str, float]:
    """em, nem and nf1 in one pass over the normalized strings."""
    _check_lengths(predictions, golds)
    norm_pred = [normalize_text(p) for p in predictions]
    norm_gold = [[normalize_text(g) for g in gs] for gs in golds]
    return {
        "em": _average(exact_match, predictions, golds),
        "nem": _average(exact_match, norm_pred, norm_gold),
        "nf1": _average(f1_score, norm_pred, norm_gold),
    }


def _check_lengths(predictions: Sequence, golds: Sequence) -> None:
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    if not predictions:
        raise ValueError("no examples to score")
