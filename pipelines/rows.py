"""From a task Example to a row of the processed schema: the pure per-example step of `deca prepare`.

The Beam pipeline wraps these functions; tests call them directly.
"""
from __future__ import annotations

import json

from deca.registry import Dropped, Example, Task
from deca.text import normalize_space, tokenize


def _text(value: str, lowercase: bool) -> tuple[str, list[str]]:
    text = normalize_space(value)
    if lowercase:
        text = text.lower()
    return text, tokenize(text, lowercase=lowercase)


def to_row(task: Task, split: str, example: Example, options=None, lowercase: bool = True,
           train_filter=None) -> dict | Dropped:
    """Normalize whitespace, lowercase and revtok-tokenize one example, then apply the task's row hook and,
    on the training split, `train_filter` (a deca.config.TrainFilterConfig).

    Returns a dict in `deca.schema.EXAMPLE_SCHEMA` or a `Dropped` (e.g. a filtered example).
    ``revtok.detokenize(row["context_tokens"]) == row["context"]`` holds for every text field.
    """
    context, context_tokens = _text(example.context, lowercase)
    question, question_tokens = _text(example.question, lowercase)
    answer, answer_tokens = _text(example.answer, lowercase)
    answers = example.answers if example.answers is not None else [example.answer]
    answers = [normalize_space(a).lower() if lowercase else normalize_space(a) for a in answers]
    row = {
        "id": example.id,
        "task": task.name,
        "split": split,
        "context": context,
        "question": question,
        "answer": answer,
        "answers": answers,
        "context_tokens": context_tokens,
        "question_tokens": question_tokens,
        "answer_tokens": answer_tokens,
        "gold": None if example.gold is None else json.dumps(example.gold, sort_keys=True, ensure_ascii=False),
    }
    if task.row_hook is not None:
        row = task.row_hook(row, split, options if options is not None else task.make_options())
    if split == "train" and train_filter is not None and not isinstance(row, Dropped):
        return filter_training_row(row, train_filter)
    return row


def filter_training_row(row: dict, f) -> dict | Dropped:
    """`row`, or a Dropped naming the training filter (prepare.train_filter) it fails."""
    n_context, n_answer = len(row["context_tokens"]), len(row["answer_tokens"])
    if f.drop_empty and (n_context == 0 or n_answer == 0):
        return Dropped(id=row["id"], reason="train_filter_empty",
                       detail=f"{n_context} context tokens, {n_answer} answer tokens")
    if f.max_context_tokens is not None and n_context > f.max_context_tokens:
        return Dropped(id=row["id"], reason="train_filter_context_too_long",
                       detail=f"{n_context} context tokens > {f.max_context_tokens}")
    if f.max_answer_tokens is not None and n_answer > f.max_answer_tokens:
        return Dropped(id=row["id"], reason="train_filter_answer_too_long",
                       detail=f"{n_answer} answer tokens > {f.max_answer_tokens}")
    return row
