"""SST (binary): sentiment classification cast as question answering.

Source: the binary SST split used by decaNLP (openai/generating-reviews-discovering-sentiment).
CSV with a header row ``label,sentence``; label 0/1 -> ``negative``/``positive``.
Paper Table 1: 6,920 / 872 / 1,821.
"""
from __future__ import annotations

import csv
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import iter_lines
from deca.tasks._renamed import register_renamed

URL = "https://raw.githubusercontent.com/openai/generating-reviews-discovering-sentiment/master/data/{}_binary_sent.csv"
QUESTION = "Is this review negative or positive?"
LABELS = {"0": "negative", "1": "positive"}
SHA256 = {
    "train": "6003623bcb35aad3a446a265b8931b7ccab61fcc10f2e9c1fec916ff67c7be35",
    "dev": "f34c4987fea208fefc2d62a1b42c83a766cbfc7ce58c2a878ef953cf91f01729",
    "test": "519cea7ed4d22fe7ec4eccbb3d5ba6d88902a3b15ce129f476aa8364463a9fc7",
}
FILES = {"train": "train", "validation": "dev", "test": "test"}


def read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """One example per CSV row after the header: context = sentence (last column), answer from column 0.

    Lines are decoded one by one (an invalid UTF-8 byte is reported on its own line), and a record must
    fit on one line: an unterminated quote would otherwise swallow the rows after it.
    """
    (path,) = files
    lines = iter_lines(path, fix="re-download it")
    rows = csv.reader(text for _, text in lines)
    try:
        header = next(rows)
    except StopIteration:
        raise DataError(path, "empty file; expected a 'label,sentence' header", fix="re-download it") from None
    if [h.strip().lower() for h in header[:1]] != ["label"]:
        raise DataError(path, f"unexpected header {header!r}; expected 'label,sentence'", line=1)
    previous = rows.line_num
    try:
        for row in rows:
            line, start = rows.line_num, previous + 1
            previous = line
            if line != start:
                raise DataError(path, f"a quoted field runs from line {start} to line {line} (an unterminated "
                                      "quote?): records of this file fit on one line", line=start,
                                fix="close the quote on that line, or re-download the official file")
            if not row:
                continue
            if len(row) < 2 or row[0] not in LABELS:
                raise DataError(path, f"malformed row {row!r}: expected '<0|1>,<sentence>'", line=line,
                                fix="check the file is the official SST binary CSV")
            yield Example(id=f"{FILES[split]}-{line - 1}", context=row[-1], question=QUESTION,
                          answer=LABELS[row[0]])
    except csv.Error as exc:
        raise DataError(path, f"malformed CSV: {exc}", line=rows.line_num) from None


TASK = register(Task(
    name="sst",
    description="Stanford Sentiment Treebank, binary (sentiment analysis)",
    metric="em",
    sources=tuple(Source(path=f"sst/{f}_binary_sent.csv", url=URL.format(f), sha256=SHA256[f]) for f in SHA256),
    splits={split: (f"sst/{f}_binary_sent.csv",) for split, f in FILES.items()},
    read=read,
    paper_counts={"train": 6920, "validation": 872, "test": 1821},
))
register_renamed(TASK)  # sst.happy_angry, sst.supportive_unsupportive (zero-shot, Section 4.3)
