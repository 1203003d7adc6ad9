"""The strongest trivial floor of a task, from its own validation data (issue 45, item 1): every answerer that
needs no model, scored with the task's official headline metric (eval/api.py), and the highest of them.

Answerers (each a prediction per example from the example alone, or from the split's answers):
  constant answer   the most frequent gold answer, for every example (the majority label of a classifier)
  empty answer      "" (what a model that learned nothing but <eos> says; WikiSQL's empty logical form)
  copy the context  the whole context (translation: copy the source; ZRE, QA-SRL: the sentence itself)
  first sentence    the context's first sentence (QA, SRL, summarization)
  lead-3            its first three sentences (summarization's classic floor)
and, for exact-match tasks whose questions name two candidates ("... <x> or <y>?", MWSC), the expected EM of
picking one at random (eval/verdict.py's `random_candidate`, computed, not drawn).

Not here, said plainly: WOZ's "no change of state" (the previous turn's state) needs the dialogue's order,
which a processed row does not keep; WOZ gets the constant and empty answers.

    floors("sst", rows) -> {"constant answer": 50.9, "empty answer": 0.0, ..., "random candidate": 50.0}
    strongest("sst", rows) -> ("constant answer", 50.9)
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from eval.api import headline_metric, score_task
from eval.verdict import EXACT, random_candidate

Row = Mapping[str, Any]
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def _sentences(text: str, n: int) -> str:
    return " ".join(SENTENCE_END.split(text.strip())[:n])


def _constant(rows: Sequence[Row]) -> Callable[[Row], str]:
    top = Counter(str(r["answer"]).strip().lower() for r in rows).most_common(1)[0][0]
    return lambda row: top


ANSWERERS: dict[str, Callable[[Sequence[Row]], Callable[[Row], str]]] = {
    "constant answer": _constant,
    "empty answer": lambda rows: lambda row: "",
    "copy the context": lambda rows: lambda row: str(row["context"]),
    "first sentence": lambda rows: lambda row: _sentences(str(row["context"]), 1),
    "lead-3": lambda rows: lambda row: _sentences(str(row["context"]), 3),
}


def floors(task: str, rows: Sequence[Row], headline: str | None = None) -> dict[str, float]:
    """{answerer: its headline score (0..100)} on `rows` (a split's rows: id, context, question, answer and
    whatever the metric reads, e.g. WikiSQL's gold), each answerer scored by the task's official metric."""
    if not rows:
        raise ValueError(f"task {task!r}: no rows to compute a floor from")
    name = headline or headline_metric(task)
    found = {}
    for label, make in ANSWERERS.items():
        answer = make(rows)
        predictions = {str(r["id"]): answer(r) for r in rows}
        found[label] = float(score_task(task, predictions, rows, headline=name)["headline"]["value"])
    if name in EXACT:
        chance = random_candidate([str(r["answer"]) for r in rows], [str(r.get("question") or "") for r in rows])
        if chance is not None:
            found["random candidate"] = chance
    return found


def strongest(task: str, rows: Sequence[Row], headline: str | None = None) -> tuple[str, float]:
    """The highest floor of `task` on `rows` and the answerer that reaches it (the first listed on a tie)."""
    found = floors(task, rows, headline)
    label = max(found, key=lambda k: found[k])
    return label, found[label]
