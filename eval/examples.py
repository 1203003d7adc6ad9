"""Per-example statistics: what each headline metric needs to be recomputed on any subset of the examples.

A task's statistics are a matrix (examples x columns) of one *kind*:

- ``mean``: one column, the example's own score ×100 (EM/nEM/nF1 per answer, ROUGE per summary, logical-form
  EM per query, WOZ goal/request EM per turn); the metric of a subset is the mean of its rows;
- ``bleu``: BLEU's sufficient statistics per sentence (eval.metrics.bleu.STAT_COLUMNS); the corpus BLEU of a
  subset is recomputed from the summed columns, not averaged over sentences;
- ``corpus_f1``: QA-ZRE's (tp, system positives, real positives) per example; the corpus F1 is recomputed
  from the summed counts.

`metric_from_sums(kind, sums, n)` is the recomputation, vectorized over any leading axes (the bootstrap's
replicates, eval.stats). `deca evaluate` writes each example's row into its predictions record (``stats``).
WOZ's joint goal of a turn depends on the predictions of the earlier turns of its dialogue; resampling turns
treats them as independent.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from eval.metrics import bleu, rouge, squad, wikisql, woz, zre
from eval.metrics.families import gold_answers as _golds
from eval.metrics.registry import ScoreOptions

KINDS = ("mean", "bleu", "corpus_f1")
SQUAD = ("em", "nem", "nf1")
ROUGE = ("rouge", "rouge1", "rouge2", "rougeL")
WIKISQL = ("lfem", "lf_unordered")
WOZ = ("joint_goal_em", "turn_request_em", "turn_goal_em", "avg_dialogue")
EXACT = ("em", "nem", "lfem", "lf_unordered", "joint_goal_em", "turn_request_em", "turn_goal_em")


def kind_of(metric: str) -> str:
    """The kind of statistics `metric` is recomputed from; a ValueError for a metric without them."""
    if metric == "bleu":
        return "bleu"
    if metric == "corpus_f1":
        return "corpus_f1"
    if metric in SQUAD + ROUGE + WIKISQL + WOZ:
        return "mean"
    raise ValueError(f"metric {metric!r} has no per-example statistics (known: bleu, corpus_f1, "
                     f"{', '.join(SQUAD + ROUGE + WIKISQL + WOZ)})")


def is_exact_match(metric: str) -> bool:
    """Whether every example scores 0 or 100 on `metric` (McNemar's test applies)."""
    return metric in EXACT


def example_stats(metric: str, predictions: Sequence[str], rows: Sequence[Mapping],
                  options: ScoreOptions | None = None) -> np.ndarray:
    """The (examples x columns) statistics of `metric` for lowercased predictions against processed rows
    (parsed `gold`), in row order."""
    options = options or ScoreOptions()
    kind = kind_of(metric)
    if kind == "bleu":
        return np.asarray(bleu.sentence_stats(predictions, _golds(rows)), dtype=float)
    if kind == "corpus_f1":
        return np.asarray(zre.example_counts(predictions, _golds(rows)), dtype=float)
    return np.asarray(_mean_scores(metric, predictions, rows, options), dtype=float).reshape(-1, 1)


def _mean_scores(metric: str, predictions: Sequence[str], rows: Sequence[Mapping],
                 options: ScoreOptions) -> list[float]:
    """The per-example scores (×100) of a metric of kind ``mean``."""
    if metric in SQUAD:
        return squad.per_example(predictions, _golds(rows))[metric]
    if metric in ROUGE:
        scores = np.asarray(rouge.per_example_scores(predictions, _golds(rows), processes=options.processes),
                            dtype=float) * 100.0
        return list(scores.mean(axis=1) if metric == "rouge" else scores[:, rouge.ROUGE_TYPES.index(metric)])
    if metric in WIKISQL:
        return [100.0 * x for x in wikisql.per_example(predictions, [r["gold"] for r in rows])[metric]]
    turns = [woz.turn_from_gold(r["gold"], r["answer"]) for r in rows]
    per = woz.per_turn(predictions, turns)
    if metric == "avg_dialogue":
        return [50.0 * (j + r) for j, r in zip(per["joint_goal_em"], per["turn_request_em"])]
    return [100.0 * x for x in per[metric]]


def metric_from_sums(kind: str, sums: np.ndarray, n) -> np.ndarray:
    """The metric (0..100) of subsets from their summed statistics (..., columns) and sizes `n` (a number or
    an array broadcasting against the leading axes)."""
    sums = np.asarray(sums, dtype=float)
    if kind == "mean":
        return sums[..., 0] / n
    if kind == "bleu":
        return bleu.bleu_from_stats(sums)
    if kind == "corpus_f1":
        return zre.f1_from_counts(sums[..., 0], sums[..., 1], sums[..., 2])
    raise ValueError(f"unknown kind of statistics {kind!r} (known: {', '.join(KINDS)})")


def metric_value(kind: str, values: np.ndarray) -> float:
    """The metric of all the examples of one statistics matrix (examples x columns)."""
    values = np.asarray(values, dtype=float)
    return float(metric_from_sums(kind, values.sum(axis=0), len(values)))
