"""The UCI "Sentiment Labelled Sentences" sets (Kotzias et al., 2015): zero-shot sentiment evaluation.

The paper (Section 4.3) evaluates an MQAN trained on decaNLP on Amazon and Yelp reviews with the SST
question and no fine-tuning. Three evaluation-only tasks, test split only: ``amazon``, ``yelp`` and
``imdb_uci`` (``imdb`` is the name decaNLP gives the full aclImdb set). Each file has one
``sentence<TAB>label`` per line, label 1 = positive, 0 = negative; the IMDb file holds raw ``"``
characters, so lines are split on the last tab with no CSV quoting. Ids are ``<task>-<line number>``.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Example, Source, Task, register
from deca.tasks._lines import iter_lines
from deca.tasks._renamed import register_renamed
from deca.tasks.sst import LABELS, QUESTION

URL = "https://archive.ics.uci.edu/ml/machine-learning-databases/00331/sentiment%20labelled%20sentences.zip"
ARCHIVE = "uci_sentiment/sentiment labelled sentences.zip"
MEMBER_DIR = "uci_sentiment/sentiment labelled sentences"
FILES = {"amazon": "amazon_cells_labelled.txt", "yelp": "yelp_labelled.txt", "imdb_uci": "imdb_labelled.txt"}
DESCRIPTIONS = {"amazon": "Amazon cell phone reviews", "yelp": "Yelp restaurant reviews",
                "imdb_uci": "IMDb movie review sentences"}
SOURCE = Source(path=ARCHIVE, url=URL, members=tuple(f"{MEMBER_DIR}/{f}" for f in FILES.values()),
                extract_to="uci_sentiment")


def read(task: str, split: str, files: Sequence[Path], options) -> Iterator[Example]:
    """One example per non-empty line: context = sentence, answer = negative/positive."""
    (path,) = files
    for number, line in iter_lines(path):
        if not line.strip():
            continue
        sentence, tab, label = line.rpartition("\t")
        if not tab or label.strip() not in LABELS or not sentence.strip():
            raise DataError(path, f"malformed line {line[:120]!r}: expected '<sentence><TAB><0|1>'", line=number,
                            fix="check the file is from the UCI 'sentiment labelled sentences' zip")
        yield Example(id=f"{task}-{number}", context=sentence, question=QUESTION, answer=LABELS[label.strip()])


TASKS: dict[str, Task] = {}
for _name, _file in FILES.items():
    TASKS[_name] = register(Task(
        name=_name,
        description=f"{DESCRIPTIONS[_name]}, UCI sentiment labelled sentences (zero-shot sentiment)",
        metric="em",
        sources=(SOURCE,),
        splits={"test": (f"{MEMBER_DIR}/{_file}",)},
        read=partial(read, _name),
        eval_only=True,
        group="sentiment",
    ))
    register_renamed(TASKS[_name])  # <name>.happy_angry, <name>.supportive_unsupportive
