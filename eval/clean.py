"""Scores on the clean subset: each task's headline and the decaScore without the validation/test examples
that `deca contamination` flags as overlapping training data (deca/contamination.py)."""
from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from deca.contamination import split_key
from eval.api import decascore, score_task


def clean_scores(split: str, predictions: Mapping[str, Mapping[str, str]],
                 rows: Mapping[str, Sequence[Mapping[str, Any]]], flagged: Mapping[str, set[str]],
                 options_for: Callable[[str], Any] | None = None) -> dict:
    """{"decascore", "partial", "tasks", "results": {task: {"n", "excluded", "metrics", "headline"}}, "not_checked"}
    for the tasks whose split the contamination output covers (the others are in ``not_checked``). A task
    whose examples are all flagged has n 0 and no headline; it is left out of the clean decaScore."""
    results, not_checked = {}, []
    for task, task_rows in rows.items():
        ids = flagged.get(split_key(task, split))
        if ids is None:
            not_checked.append(task)
            continue
        keep = [r for r in task_rows if str(r["id"]) not in ids]
        entry: dict[str, Any] = {"n": len(keep), "excluded": len(task_rows) - len(keep)}
        if keep:
            res = score_task(task, {str(r["id"]): predictions[task][str(r["id"])] for r in keep}, keep,
                             options=options_for(task) if options_for else None)
            entry.update(metrics=res["metrics"], headline=res["headline"])
        results[task] = entry
    total = decascore({t: r for t, r in results.items() if r["n"]})
    return {"decascore": total["decascore"], "partial": total["partial"], "tasks": total["tasks"],
            "results": results, "not_checked": not_checked}
