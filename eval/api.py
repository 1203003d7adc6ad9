"""The evaluation API shared by `deca score` and `deca evaluate`: score one task, sum the decaScore.

``score_task(task_name, predictions, gold_rows)`` scores predictions (id -> text) against rows of the
processed schema and returns ``{"task", "n", "metrics": {name: value}, "headline": {"name", "value"}}``;
``decascore(per_task)`` sums the headline metrics of the decaNLP tasks present. Values are on the 0..100
scale. Predictions are lowercased before scoring, as decaNLP does; golds are lowercased in the processed
data already.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Sequence

from deca.errors import ConfigError, DecaError
from deca.metric_logging import finite
from deca.registry import all_tasks, get_task
from eval.examples import example_stats, kind_of
from eval.metrics.registry import DECASCORE, ScoreOptions, compute, get_metric

EXAMPLES_SHOWN = 5


class PredictionMismatch(DecaError):
    """Prediction ids that do not match the gold ids (missing, unknown or duplicated)."""

    def __init__(self, task: str, missing: Sequence[str], unknown: Sequence[str], n_gold: int):
        self.task, self.missing, self.unknown = task, list(missing), list(unknown)
        parts = []
        if missing:
            parts.append(f"{len(missing)} of {n_gold} gold ids have no prediction "
                         f"(e.g. {_examples(missing)})")
        if unknown:
            parts.append(f"{len(unknown)} predicted ids are not in the gold (e.g. {_examples(unknown)})")
        super().__init__(f"task {task!r}: " + "; ".join(parts)
                         + "; predictions must cover exactly the ids of the scored split")


def _examples(ids: Sequence[str]) -> str:
    shown = ", ".join(repr(i) for i in list(ids)[:EXAMPLES_SHOWN])
    return shown + (", ..." if len(ids) > EXAMPLES_SHOWN else "")


def headline_metric(task_name: str) -> str:
    """The headline metric a task declares in the task registry (`Task.metric`)."""
    return get_task(task_name).metric


def check_metrics(tasks: Sequence[str]) -> None:
    """Fail early (a ConfigError naming the task) when a task's headline metric is not registered, e.g. a
    custom task's ``metric`` in params.yaml."""
    for task in tasks:
        try:
            get_metric(headline_metric(task))
        except KeyError as exc:
            raise ConfigError(f"task {task!r}: {exc}") from None


def score_task(task_name: str, predictions: Mapping[str, str], gold_rows: Sequence[Mapping[str, Any]],
               *, headline: str | None = None, options: ScoreOptions | None = None, examples: bool = False) -> dict:
    """Score one task. `headline` overrides the registry's `Task.metric` (for tasks not registered). With
    `examples`, the result has ``examples``: the headline's per-example statistics in gold-row order,
    ``{"kind", "values"}`` (eval.examples), for intervals and paired comparisons.

    Raises PredictionMismatch when prediction ids and gold ids differ, naming counts and examples.
    """
    name = headline or headline_metric(task_name)
    get_metric(name)  # unknown metric names fail here, listing the known ones
    if not gold_rows:
        raise ValueError(f"task {task_name!r}: no gold rows to score")
    ids = [str(r["id"]) for r in gold_rows]
    gold_ids = set(ids)
    if len(gold_ids) != len(ids):
        seen: set[str] = set()
        dupes = [i for i in ids if i in seen or seen.add(i)]
        raise ValueError(f"task {task_name!r}: duplicated gold ids (e.g. {_examples(dupes)})")
    missing = [i for i in ids if i not in predictions]
    unknown = sorted(str(i) for i in predictions if str(i) not in gold_ids)
    if missing or unknown:
        raise PredictionMismatch(task_name, missing, unknown, len(ids))
    rows = [_with_parsed_gold(r) for r in gold_rows]
    preds = [_as_text(predictions[i]).lower() for i in ids]
    metrics = compute(name, preds, rows, options)
    result = {"task": task_name, "n": len(rows), "metrics": metrics, "headline": {"name": name, "value": metrics[name]}}
    if examples:
        try:
            kind = kind_of(name)
        except ValueError:  # a metric without per-example statistics (a custom task's): no interval
            result["examples"] = None
        else:
            result["examples"] = {"kind": kind, "values": example_stats(name, preds, rows, options)}
    return result


def _as_text(value: Any) -> str:
    return "" if value is None else str(value)


def _with_parsed_gold(row: Mapping[str, Any]) -> Mapping[str, Any]:
    gold = row.get("gold")
    if isinstance(gold, str):
        row = dict(row)
        row["gold"] = json.loads(gold)
    return row


def decascore(per_task: Mapping[str, Mapping[str, Any]]) -> dict:
    """Sum of the headline metrics of the decaNLP tasks present in `per_task` (results of score_task).

    ``{"decascore", "tasks" (decaNLP tasks summed, in the paper's order), "partial" (not all ten present),
    "missing", "not_counted" (scored tasks outside the decaNLP ten), "max"}``. The headline of each task is
    the metric its registry entry declares; a result whose headline disagrees is an error.
    """
    registered = all_tasks()
    tasks = [t for t in DECASCORE.tasks if t in per_task]
    total = 0.0
    for task in tasks:
        result = per_task[task]
        name = registered[task].metric if task in registered else result["headline"]["name"]
        if result["headline"]["name"] != name:
            raise ValueError(f"task {task!r}: result headline {result['headline']['name']!r} "
                             f"but the task registry declares {name!r}")
        total += float(result["metrics"][name])
    return {
        "decascore": total,
        "tasks": tasks,
        "partial": len(tasks) < len(DECASCORE.tasks),
        "missing": [t for t in DECASCORE.tasks if t not in per_task],
        "not_counted": [t for t in per_task if t not in DECASCORE.tasks],
        "max": DECASCORE.maximum,
    }


def metric_values(split: str, per_task: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """The metrics of a scored split under their names in deca.metric_logging's one namespace:
    ``<split>/<task>/<metric>``, ``<split>/<task>/headline`` and ``<split>/decascore`` (finite numbers only).
    Figure 3's answer sources, where a result carries them, are eval.sources.source_values'."""
    out: dict[str, Any] = {}
    for task, result in per_task.items():
        out.update({f"{split}/{task}/{name}": value for name, value in result["metrics"].items()})
        out[f"{split}/{task}/headline"] = result["headline"]["value"]
    out[f"{split}/decascore"] = decascore(per_task)["decascore"]
    return finite(out)
