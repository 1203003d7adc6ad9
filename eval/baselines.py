"""Chance and majority baselines of a task, computed from its gold answers: the floor a verdict needs.

- classification tasks (an exact-match headline and at most `MAX_LABELS` distinct answers: SST, MNLI, SNLI,
  ...): the EM of always answering the most frequent gold answer (`majority`);
- tasks whose question names the candidates, ending ``"<x> or <y>?"`` with the gold among them (MWSC): the
  expected EM of picking one of the two named candidates at random (`random_candidate`), 50 per example
  whose gold is named;
- other tasks (nF1, BLEU, ROUGE, ...): no baseline (None); a verdict on them cannot say "at the floor".
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from deca.registry import all_tasks

MAX_LABELS = 10  # distinct gold answers of a classification task
NAMED_SHARE = 0.9  # share of questions that must name their gold as a candidate
EXACT = ("em", "nem")


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


def baseline(task: str, answers: Sequence[str], questions: Sequence[str] = ()) -> float | None:
    """The task's floor from its gold answers (and questions): random candidate, else majority for a
    classification task, else None."""
    tasks = all_tasks()
    if task not in tasks or tasks[task].metric not in EXACT or not answers:
        return None
    if questions:
        chance = random_candidate(answers, questions)
        if chance is not None:
            return chance
    if len({a.strip().lower() for a in answers}) <= MAX_LABELS:
        return majority(answers)
    return None
