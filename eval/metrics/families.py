"""Registration of the decaNLP metric families: adapters from processed rows to the metric functions."""
from __future__ import annotations

from typing import Mapping, Sequence

# The metric modules by their full names: `from eval.metrics import bleu` would import this package's
# __init__, which imports this module (a circle through the package).
import eval.metrics.bleu as bleu
import eval.metrics.rouge as rouge
import eval.metrics.squad as squad
import eval.metrics.wikisql as wikisql
import eval.metrics.woz as woz
import eval.metrics.zre as zre
from eval.metrics.registry import Metric, ScoreOptions, register_family


def gold_answers(rows: Sequence[Mapping]) -> list[list[str]]:
    """All gold answers of each row (`answers`, falling back to `answer`), lowercased."""
    out = []
    for row in rows:
        answers = row.get("answers") or [row["answer"]]
        out.append([a.lower() for a in answers])
    return out


_golds = gold_answers


def _gold_json(row: Mapping, task_hint: str) -> Mapping:
    gold = row.get("gold")
    if not isinstance(gold, Mapping):
        raise ValueError(f"row {row.get('id')!r}: {task_hint} scoring needs the `gold` JSON column, got {gold!r}")
    return gold


@register_family("squad", [
    Metric("em", True, "exact match after lowercasing, max over golds"),
    Metric("nem", True, "exact match after SQuAD v1.1 normalization, max over golds"),
    Metric("nf1", True, "bag-of-tokens F1 after SQuAD v1.1 normalization, max over golds"),
])
def _squad(predictions: Sequence[str], rows: Sequence[Mapping], options: ScoreOptions) -> dict[str, float]:
    return squad.squad_metrics(predictions, _golds(rows))


@register_family("bleu", [Metric("bleu", True, "corpus BLEU (sacrebleu, 13a, lowercased)")])
def _bleu(predictions, rows, options):
    return {"bleu": bleu.bleu(predictions, _golds(rows))}


@register_family("rouge", [
    Metric("rouge", True, "mean of ROUGE-1, ROUGE-2 and ROUGE-L F (decaNLP avg_rouge)"),
    Metric("rouge1", True, "ROUGE-1 F, per example, averaged (rouge-score, stemmed)"),
    Metric("rouge2", True, "ROUGE-2 F, per example, averaged (rouge-score, stemmed)"),
    Metric("rougeL", True, "ROUGE-L F, per example, averaged (rouge-score, stemmed)"),
])
def _rouge(predictions, rows, options):
    return rouge.rouge(predictions, _golds(rows), processes=options.processes, progress=options.progress)


@register_family("zre", [
    Metric("corpus_f1", True, "QA-ZRE corpus F1 over word sets; 'unanswerable' is never a positive"),
    Metric("precision", True, "QA-ZRE corpus precision"),
    Metric("recall", True, "QA-ZRE corpus recall"),
])
def _zre(predictions, rows, options):
    return zre.corpus_f1(predictions, _golds(rows))


@register_family("woz", [
    Metric("joint_goal_em", True, "WOZ joint goal accuracy of the accumulated belief state (dsEM)"),
    Metric("turn_request_em", True, "WOZ exact match of this turn's request list"),
    Metric("turn_goal_em", True, "WOZ exact match of this turn's inform change"),
    Metric("avg_dialogue", True, "mean of joint_goal_em and turn_request_em"),
])
def _woz(predictions, rows, options):
    turns = [woz.turn_from_gold(_gold_json(r, "WOZ"), r["answer"]) for r in rows]
    return woz.dialogue_metrics(predictions, turns)


@register_family("wikisql", [
    Metric("lfem", True, "WikiSQL logical-form exact match, conditions in order"),
    Metric("lf_unordered", True, "WikiSQL logical-form match, conditions as a set (official unordered)"),
    Metric("exec_acc", True, "WikiSQL execution accuracy on the split's SQLite database (when available)"),
])
def _wikisql(predictions, rows, options):
    golds = [_gold_json(r, "WikiSQL") for r in rows]
    return wikisql.logical_form_metrics(predictions, golds, db_path=options.wikisql_db, progress=options.progress)
