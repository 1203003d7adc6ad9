"""QA-ZRE: zero-shot relation extraction cast as question answering (Levy et al., 2017).

Source: ``relation_splits.tar.bz2``; decaNLP uses fold 0, ``relation_splits/{train,dev,test}.0``.
Each line is tab-separated: relation, question template (with ``XXX`` for the subject), subject,
sentence, then zero or more answer columns. Cast as decaNLP does (reference §1):
- context: the sentence (4th column);
- question: the template with ``XXX`` replaced by the subject;
- answer: the answer columns joined by ``", "``, or the literal ``unanswerable`` when there are none
  (decaNLP writes ``Unanswerable``; every text is lowercased in preprocessing, so the two agree).
Ids are ``<file name>-<line number>``. Paper Table 1: 840,000 / 600 / 12,000.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Example, Source, Task, register
from deca.tasks._lines import iter_lines

URL = "http://nlp.cs.washington.edu/zeroshot/relation_splits.tar.bz2"
ARCHIVE = "zre/relation_splits.tar.bz2"
FILES = {"train": "zre/relation_splits/train.0", "validation": "zre/relation_splits/dev.0",
         "test": "zre/relation_splits/test.0"}
UNANSWERABLE = "unanswerable"


def parse_line(path: Path, number: int, line: str) -> Example:
    """One example from one line of a relation_splits file (`line` without its line ending)."""
    columns = line.split("\t")
    if len(columns) < 4 or not columns[1] or not columns[3]:
        raise DataError(path, f"malformed line {line[:120]!r}: expected at least 4 tab-separated columns "
                              "(relation, question template, subject, sentence[, answers...])", line=number,
                        fix="check the file is an extracted member of relation_splits.tar.bz2")
    _relation, template, subject, sentence = columns[:4]
    answer = ", ".join(columns[4:])
    return Example(id=f"{path.name}-{number}", context=sentence, question=template.replace("XXX", subject),
                   answer=answer if answer else UNANSWERABLE)


def read(split: str, files: Sequence[Path], options) -> Iterator[Example]:
    """One example per non-empty line, in file order."""
    for path in files:
        for number, line in iter_lines(path):
            if line.strip():
                yield parse_line(Path(path), number, line)


register(Task(
    name="zre",
    description="QA-ZRE, fold 0 (zero-shot relation extraction)",
    metric="corpus_f1",
    sources=(Source(path=ARCHIVE, url=URL, members=tuple(FILES.values()), extract_to="zre",
                    note="the archive holds relation_splits/{train,dev,test}.{0..9}; decaNLP uses fold 0"),),
    splits={split: (rel,) for split, rel in FILES.items()},
    read=read,
    paper_counts={"train": 840000, "validation": 600, "test": 12000},
))
