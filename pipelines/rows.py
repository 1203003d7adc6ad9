"""From a task Example to a row of the processed schema: the pure per-example step of `deca prepare`.

The Beam pipeline wraps these functions; tests call them directly. A `TextCache` passed to `to_row`
tokenizes each distinct text once: SQuAD repeats a paragraph for each of its ~5 questions and QA-SRL a
sentence for each of its questions, SST and WOZ ask one fixed question; revtok is most of the work.
"""
from __future__ import annotations

import json

from deca.registry import Dropped, Example, Task
from deca.text import normalize_space
from deca.text import prepare_text as _text


class TextCache:
    """Memo of normalized text -> tokens for the examples of one work unit (cleared when it holds
    `max_entries` texts, which bounds its memory). Rows get their own copy of each token list."""

    def __init__(self, max_entries: int = 4096):
        self.max_entries = max_entries
        self._memo: dict[tuple[bool, str], tuple[str, list[str]]] = {}

    def text(self, value: str, lowercase: bool) -> tuple[str, list[str]]:
        """`_text(value, lowercase)`, computed once per distinct value."""
        key = (lowercase, value)
        hit = self._memo.get(key)
        if hit is None:
            if len(self._memo) >= self.max_entries:
                self._memo.clear()
            hit = self._memo[key] = _text(value, lowercase)
        return hit[0], list(hit[1])


def to_row(task: Task, split: str, example: Example, options=None, lowercase: bool = True,
           train_filter=None, cache: TextCache | None = None) -> dict | Dropped:
    """Normalize whitespace, lowercase and revtok-tokenize one example, then apply the task's row hook and,
    on the training split, `train_filter` (a deca.config.TrainFilterConfig). With `cache`, a text seen
    before is not tokenized again (same row).

    Returns a dict in `deca.schema.EXAMPLE_SCHEMA` or a `Dropped` (e.g. a filtered example).
    ``revtok.detokenize(row["context_tokens"]) == row["context"]`` holds for every text field.
    """
    text = _text if cache is None else cache.text
    context, context_tokens = text(example.context, lowercase)
    question, question_tokens = text(example.question, lowercase)
    answer, answer_tokens = text(example.answer, lowercase)
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
