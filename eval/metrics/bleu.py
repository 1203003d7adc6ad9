"""Corpus BLEU (IWSLT), exactly decaNLP's `computeBLEU`.

``sacrebleu.corpus_bleu(predictions, reference_streams, lowercase=True).score``: default 13a
tokenization, exponential smoothing, on detokenized lowercased text. Reference stream k holds the k-th
gold of every example; an example with fewer golds than the others gets ``None`` there (sacrebleu's
way of saying "no reference"), where decaNLP would have crashed.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import sacrebleu


def reference_streams(golds: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Transpose per-example gold lists into sacrebleu's reference streams."""
    width = max((len(g) for g in golds), default=0)
    if width == 0:
        raise ValueError("BLEU needs at least one reference per corpus")
    return [[g[k] if k < len(g) else None for g in golds] for k in range(width)]


def bleu(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU (0..100) of the predictions against all their golds."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    if not predictions:
        raise ValueError("no examples to score")
    return float(sacrebleu.corpus_bleu(list(predictions), reference_streams(golds), lowercase=True).score)


ORDER = 4  # n-gram orders of BLEU; a sentence's statistics: sys_len, ref_len, matches 1..4, totals 1..4
STAT_COLUMNS = ("sys_len", "ref_len", *(f"match{n}" for n in range(1, ORDER + 1)),
                *(f"total{n}" for n in range(1, ORDER + 1)))


def sentence_stats(predictions: Sequence[str], golds: Sequence[Sequence[str]]) -> list[list[int]]:
    """Each sentence's sufficient statistics (STAT_COLUMNS) as `bleu` computes them: summed over any subset of
    sentences they give that subset's corpus BLEU (`bleu_from_stats`)."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    if not predictions:
        raise ValueError("no examples to score")
    metric = sacrebleu.BLEU(lowercase=True)
    return [[int(x) for x in row]
            for row in metric._extract_corpus_statistics(list(predictions), reference_streams(golds))]


def bleu_from_stats(sums):
    """Corpus BLEU (0..100) from summed sentence statistics, shape (..., 10): sacrebleu's `compute_bleu` with
    exponential smoothing, vectorized (one BLEU per leading index)."""
    sums = np.asarray(sums, dtype=float)
    sys_len, ref_len = sums[..., 0], sums[..., 1]
    correct, total = sums[..., 2:2 + ORDER], sums[..., 2 + ORDER:]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        bp = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
        halvings = np.cumsum(correct == 0, axis=-1)  # "exp" smoothing: 1/2, 1/4, ... for each order with no match
        precision = np.where(correct > 0, 100.0 * correct / total, 100.0 / (2.0 ** halvings * total))
        score = bp * np.exp(np.log(precision).mean(axis=-1))
    defined = (total > 0).all(axis=-1) & (correct > 0).any(axis=-1)  # else sacrebleu gives 0
    return np.where(defined, score, 0.0)
