"""Zero-shot classification with renamed labels (paper Section 4.3): the sentiment tasks asked with other
label words, e.g. "Is this review angry or happy?", whose gold answers use the new words.

For each of SST (validation, test), Amazon, Yelp and IMDb-UCI (test) and each renaming of
positive/negative (happy/angry, supportive/unsupportive), an evaluation-only task
``<task>.<positive word>_<negative word>`` reads the base task's files with the base reader, then renames
the label words in the question and the answer; nothing else changes. The base task's module registers
its variants (`register_renamed`), so that they share its DVC dependencies. `deca prepare` and
`deca evaluate` take them like any task (``deca evaluate --tasks 'sst*'`` scores the original question
and both renamings side by side); their exact match counts the renamed word as the gold.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Iterator, Mapping, Sequence

from deca.registry import Dropped, Example, Task, register

RENAMINGS = {"happy_angry": {"positive": "happy", "negative": "angry"},
             "supportive_unsupportive": {"positive": "supportive", "negative": "unsupportive"}}


def rename(text: str, words: Mapping[str, str]) -> str:
    """`text` with each label word (a whole word, any case) replaced by its new word."""
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE)
    return pattern.sub(lambda m: words[m.group(0).lower()], text)


def read_renamed(base: Task, words: Mapping[str, str], split: str, files: Sequence, options
                 ) -> Iterator[Example | Dropped]:
    """The base task's examples with the label words renamed in the question and the answer."""
    for example in base.read(split, files, options):
        if isinstance(example, Dropped):
            yield example
            continue
        yield dataclasses.replace(example, question=rename(example.question, words),
                                  answer=words.get(example.answer, example.answer),
                                  answers=[words.get(a, a) for a in example.answers] if example.answers else None)


def register_renamed(base: Task) -> list[Task]:
    """Register the renamed-label variants of a positive/negative task; returns them."""
    return [_register(base, suffix, words) for suffix, words in RENAMINGS.items()]


def _register(base: Task, suffix: str, words: Mapping[str, str]) -> Task:
    def read(split, files, options):
        return read_renamed(base, words, split, files, options)

    return register(Task(
        name=f"{base.name}.{suffix}",
        description=f"{base.description}, asked with {' / '.join(words.values())} for "
                    f"{' / '.join(words)} (zero-shot, renamed labels)",
        metric=base.metric,
        sources=base.sources,
        splits={s: files for s, files in base.splits.items() if s != "train"},
        read=read,
        options=base.options,
        row_hook=base.row_hook,
        eval_only=True,
        group="sentiment",
    ), module=base.module)  # the base task's module: the variants share its DVC dependencies

