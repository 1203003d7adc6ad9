"""Corpus BLEU (IWSLT), exactly decaNLP's `computeBLEU`.

``sacrebleu.corpus_bleu(predictions, reference_streams, lowercase=True).score``: default 13a
tokenization, exponential smoothing, on detokenized lowercased text. Reference stream k holds the k-th
gold of every example; an example with fewer golds than the others gets ``None`` there (sacrebleu's
way of saying "no reference"), where decaNLP would have crashed.
"""
from __future__ import annotations

from typing import Sequence

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
