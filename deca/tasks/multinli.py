"""MultiNLI 1.0: natural language inference cast as question answering (see `_nli` for the casting).

Source: ``multinli_1.0.zip`` (NYU), extracting to ``multinli_1.0/multinli_1.0_{train,dev_matched,
dev_mismatched}.jsonl``.
- ``multinli.in.out`` (decaNLP's task): train = the training file; validation = the matched then the
  mismatched development file (decaNLP's ``in`` and ``out`` subtasks together); no test (the
  test labels are not public).
- ``multinli.<genre>`` (CLER paper, Table 3): the records of one genre. The five training genres have
  train (training file) and validation (matched dev); the five genres only in the mismatched dev set
  are evaluation-only. Records of other genres are simply not part of such a task.
Paper Table 1: 392,702 / 20,000 (the 20,000 raw dev records; about 1.8% are labelled ``-`` and are
excluded by default, reported as ``no_gold_label`` drops).
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Iterator, Sequence

from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._nli import NLIOptions, read_nli

URL = "https://www.nyu.edu/projects/bowman/multinli/multinli_1.0.zip"
DIR = "multinli/multinli_1.0"
TRAIN = f"{DIR}/multinli_1.0_train.jsonl"
MATCHED = f"{DIR}/multinli_1.0_dev_matched.jsonl"
MISMATCHED = f"{DIR}/multinli_1.0_dev_mismatched.jsonl"
SOURCES = (Source(path="multinli/multinli_1.0.zip", url=URL, extract_to="multinli",
                  members=(TRAIN, MATCHED, MISMATCHED)),)
TRAIN_GENRES = ("fiction", "government", "slate", "telephone", "travel")
MISMATCHED_GENRES = ("facetoface", "letters", "nineeleven", "oup", "verbatim")


def read(genre: str | None, split: str, files: Sequence[Path], options: NLIOptions) -> Iterator[Example | Dropped]:
    """Examples of a split's MultiNLI files; `genre` (bound with functools.partial) keeps one genre."""
    yield from read_nli(files, options, corpus="MultiNLI", genre=genre)


register(Task(
    name="multinli.in.out",
    description="MultiNLI, matched and mismatched (natural language inference)",
    metric="em",
    sources=SOURCES,
    splits={"train": (TRAIN,), "validation": (MATCHED, MISMATCHED)},
    read=partial(read, None),
    options=NLIOptions,
    paper_counts={"train": 392702, "validation": 20000},
))

for _genre in TRAIN_GENRES + MISMATCHED_GENRES:
    _matched = _genre in TRAIN_GENRES
    register(Task(
        name=f"multinli.{_genre}",
        description=f"MultiNLI, genre {_genre} ({'matched' if _matched else 'mismatched, evaluation only'})",
        metric="em",
        sources=SOURCES,
        splits={"train": (TRAIN,), "validation": (MATCHED,)} if _matched else {"validation": (MISMATCHED,)},
        read=partial(read, _genre),
        options=NLIOptions,
        eval_only=not _matched,
        group="nli",
    ))
