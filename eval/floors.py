"""The floors of a task, from its own validation data (issue 45, item 1): every answerer that needs no model,
scored with the task's official headline metric (eval/api.py), and the highest of them, which is the floor
eval/verdict.py judges a side against.

Answerers (each a prediction per example from the example alone, or from the split's answers):
  constant answer      the most frequent gold answer, for every example: a classifier's majority label;
                       WikiSQL's most frequent logical form (its answer is the logical form written out, so
                       the constant answer is it; it scores where a question's table has those columns)
  empty answer         "" (what a model that learned nothing but <eos> says; WikiSQL's empty logical form)
  copy the context     the whole context (ZRE, QA-SRL: the sentence itself); "copy the source" for a
                       translation task (BLEU headline), whose context is the source sentence
  first sentence       the context's first sentence (QA, SRL, summarization)
  lead-3               its first three sentences (summarization's classic floor)
  no change of state   WOZ (joint goal headline): "none" at every turn, the tracker that never changes its
                       state (which then stays empty: the metric accumulates the predicted changes over a
                       dialogue). Carrying the previous turn's state forward is no floor here: that state is
                       the gold one, which the model never sees (it answers each turn from that turn alone).
and, where the questions name two candidates ("... <x> or <y>?": MWSC, SST's "negative or positive"):
  first candidate      the question's first named candidate
  random candidate     the expected EM of picking one of the two at random (computed, not drawn)
The majority label and the random candidate can differ (SST: 50.9 and 50.0): the higher is the floor.

    floors("sst", rows) -> {"constant answer": 50.9, "empty answer": 0.0, ..., "random candidate": 50.0}
    strongest("sst", rows) -> ("constant answer", 50.9)
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any, Callable, Mapping, Sequence

from eval.api import headline_metric, score_task

Row = Mapping[str, Any]
Answerer = Callable[[Row], str]
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
EXACT = ("em", "nem")  # headline metrics whose candidate floors are computed
NAMED_SHARE = 0.9  # share of questions that must name their gold as a candidate
STATE_METRICS = ("joint_goal_em",)  # headlines of a change of state accumulated over a dialogue
COPY_SOURCE = ("bleu",)  # headlines of translation: the context is the source sentence


def _sentences(text: str, n: int) -> str:
    return " ".join(SENTENCE_END.split(text.strip())[:n])


def _constant(rows: Sequence[Row]) -> Answerer:
    top = Counter(str(r["answer"]).strip().lower() for r in rows).most_common(1)[0][0]
    return lambda row: top


ANSWERERS: dict[str, Callable[[Sequence[Row]], Answerer]] = {
    "constant answer": _constant,
    "empty answer": lambda rows: lambda row: "",
    "copy the context": lambda rows: lambda row: str(row["context"]),
    "first sentence": lambda rows: lambda row: _sentences(str(row["context"]), 1),
    "lead-3": lambda rows: lambda row: _sentences(str(row["context"]), 3),
}


def majority(answers: Sequence[str]) -> float:
    """EM (0..100) of answering the most frequent gold answer every time."""
    if not answers:
        raise ValueError("no answers to count")
    return 100.0 * Counter(a.strip().lower() for a in answers).most_common(1)[0][1] / len(answers)


def names_gold(question: str, answer: str) -> bool:
    """Whether `question` ends by naming `answer` as one of two candidates: "... <answer> or <y>?" or
    "... <x> or <answer>?"."""
    q, g = " ".join(question.lower().split()), " ".join(answer.lower().split())
    return bool(g) and q.endswith("?") and (q.endswith(f" or {g}?") or f" {g} or " in q[-(2 * len(g) + 200):])


def random_candidate(answers: Sequence[str], questions: Sequence[str]) -> float | None:
    """Expected EM (0..100) of picking one of the question's two named candidates at random; None unless most
    questions name their gold as a candidate."""
    named = [names_gold(q, a) for q, a in zip(questions, answers)]
    if not named or sum(named) < NAMED_SHARE * len(named):
        return None
    return 50.0 * sum(named) / len(named)


def first_candidate(question: str) -> str:
    """The first of the two candidates a question ends by naming: in "Who is hurt? Bob or Charlie?" the last
    clause's "Bob"; in a one-clause question ("Is this review negative or positive?") the words before " or ",
    as many as the second candidate has ("negative"). "" when the question names none."""
    q = " ".join(question.split())
    if not q.endswith("?") or " or " not in q:
        return ""
    clause = SENTENCE_END.split(q[:-1])[-1]
    head, _, second = clause.rpartition(" or ")
    if len(SENTENCE_END.split(q[:-1])) > 1:
        return head
    return " ".join(head.split()[-len(second.split()):])


def answerers(task: str, rows: Sequence[Row], headline: str) -> dict[str, Answerer]:
    """Every answerer that applies to `task`'s rows under `headline`, by its name on the pages."""
    found = {label: make(rows) for label, make in ANSWERERS.items()}
    if headline in COPY_SOURCE:
        found["copy the source"] = found.pop("copy the context")
    if headline in STATE_METRICS:
        found["no change of state"] = lambda row: "none"
    if headline in EXACT and candidates(rows) is not None:
        found["first candidate"] = lambda row: first_candidate(str(row["question"]))
    return found


def candidates(rows: Sequence[Row]) -> float | None:
    """The random-candidate EM of `rows` (`random_candidate`), None where their questions name no two."""
    return random_candidate([str(r["answer"]) for r in rows], [str(r.get("question") or "") for r in rows])


def floors(task: str, rows: Sequence[Row], headline: str | None = None) -> dict[str, float]:
    """{answerer: its headline score (0..100)} on `rows` (a split's rows: id, context, question, answer and
    whatever the metric reads, e.g. WOZ's and WikiSQL's gold), each answerer scored by the task's metric."""
    if not rows:
        raise ValueError(f"task {task!r}: no rows to compute a floor from")
    name = headline or headline_metric(task)
    found = {}
    for label, answer in answerers(task, rows, name).items():
        predictions = {str(r["id"]): answer(r) for r in rows}
        found[label] = float(score_task(task, predictions, rows, headline=name)["headline"]["value"])
    chance = candidates(rows) if name in EXACT else None
    if chance is not None:
        found["random candidate"] = chance
    return found


def highest(found: Mapping[str, float]) -> tuple[str, float]:
    """The highest of some floors and its answerer (the first listed on a tie)."""
    if not found:
        raise ValueError("no floors to choose from")
    label = max(found, key=lambda k: found[k])
    return label, found[label]


def strongest(task: str, rows: Sequence[Row], headline: str | None = None) -> tuple[str, float]:
    """The highest floor of `task` on `rows` and the answerer that reaches it (the first listed on a tie)."""
    return highest(floors(task, rows, headline))
