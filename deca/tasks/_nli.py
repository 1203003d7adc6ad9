"""Natural language inference cast as question answering, shared by MultiNLI and SNLI.

decaNLP casts an NLI record (``sentence1``, ``sentence2``, ``gold_label``) as
- context: ``Premise: "<sentence1>"``;
- question: ``Hypothesis: "<sentence2>" -- entailment, neutral, or contradiction?``;
- answer: ``gold_label`` as written.
Records labelled ``-`` (no annotator majority) were kept by decaNLP; the paper excludes them, and so do
we by default (``exclude_unlabelled``), each one a counted drop (``no_gold_label``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example
from deca.tasks._lines import field, iter_json_objects

LABELS = ("entailment", "neutral", "contradiction")
UNLABELLED = "-"
FIX = "the file should be an official {corpus} 1.0 .jsonl file; download and extract the archive again"


@dataclass(frozen=True)
class NLIOptions:
    """exclude_unlabelled: drop records whose gold_label is '-' (the paper); False keeps them (decaNLP)."""

    exclude_unlabelled: bool = True


def nli_context(premise: str) -> str:
    return f'Premise: "{premise}"'


def nli_question(hypothesis: str) -> str:
    return f'Hypothesis: "{hypothesis}" -- entailment, neutral, or contradiction?'


def file_tag(path: Path) -> str:
    """Short name of a release file for ids: 'snli_1.0_dev.jsonl' -> 'dev'."""
    stem = path.stem
    return stem.split("_1.0_", 1)[1] if "_1.0_" in stem else stem


def read_nli(files: Sequence[Path], options: NLIOptions, corpus: str,
             genre: str | None = None) -> Iterator[Example | Dropped]:
    """Examples of the NLI jsonl `files`, in order; with `genre`, only that genre's records.

    Ids are ``<file tag>-<line number>`` (e.g. ``dev_matched-12``), unique across the files of a split.
    """
    fix = FIX.format(corpus=corpus)
    for path in (Path(f) for f in files):
        tag = file_tag(path)
        for lineno, record in iter_json_objects(path, fix=fix):
            if genre is not None and field(record, "genre", str, path, lineno, fix) != genre:
                continue
            premise = field(record, "sentence1", str, path, lineno, fix)
            hypothesis = field(record, "sentence2", str, path, lineno, fix)
            label = field(record, "gold_label", str, path, lineno, fix)
            id = f"{tag}-{lineno}"
            if label not in LABELS and label != UNLABELLED:
                raise DataError(path, f"unknown gold_label {label!r}; expected one of {', '.join(LABELS)} or '-'",
                                line=lineno, fix=fix)
            if label == UNLABELLED and options.exclude_unlabelled:
                yield Dropped(id=id, reason="no_gold_label", detail=str(record.get("pairID", "")))
                continue
            yield Example(id=id, context=nli_context(premise), question=nli_question(hypothesis), answer=label)
