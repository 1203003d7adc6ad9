"""The MRQA 2019 shared task sets (Fisch et al., 2019): extractive QA for generalization studies.

Twelve tasks, declared by one loop: six in-domain sets with train + validation (``mrqa.squad``,
``mrqa.newsqa``, ``mrqa.triviaqa``, ``mrqa.searchqa``, ``mrqa.hotpotqa``,
``mrqa.naturalquestions``, from ``release/v2/{train,dev}/``) and six out-of-domain sets with a
validation split only (``mrqa.drop``, ``mrqa.race``, ``mrqa.duorc``, ``mrqa.relationextraction``,
``mrqa.textbookqa``, ``mrqa.bioasq``).

Format: gzipped JSON lines; the first line is a header ``{"header": {"dataset", "split"}}``; every
other line is a context with its questions (``context``, ``qas``: ``qid``, ``question``, ``answers``,
``detected_answers``). One example per question: context = the context (with MRQA's ``[TLE]``,
``[DOC]``, ``[PAR]`` markers), question = the question, answer = the text of the first detected
answer span (it occurs in the context, as a pointer network needs; falls back to the first of
``answers``), answers = ``answers`` (every accepted answer, for EM/F1 as the official evaluator).
Ids are the MRQA ``qid``s. MD5 sums and question counts are those of the official MRQA README.
"""
from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Iterator, Sequence

from deca.errors import DataError
from deca.registry import Example, Source, Task, register
from deca.tasks._lines import REDOWNLOAD, require_file

URL = "https://s3.us-east-2.amazonaws.com/mrqa/release/v2/{}/{}.jsonl.gz"
BIOASQ_NOTE = ("BioASQ is not in the public MRQA release directory: register at "
               "http://participants-area.bioasq.org/MRQA2019/ , download BioASQ.jsonl.gz "
               "(md5 70752a39beb826a022ab21353cb66e54) and put it at mrqa/dev/BioASQ.jsonl.gz in the raw "
               "directory or the mirror")

# task suffix -> (file stem, md5 of the train file (None: out-of-domain, no train split), md5 of the dev file,
#                 questions in train, questions in dev), as listed in the official MRQA README
DATASETS = {
    "squad": ("SQuAD", "efd6a551d2697c20a694e933210489f8", "05f3f16c5c31ba8e46ff5fa80647ac46", 86588, 10507),
    "newsqa": ("NewsQA", "182f4e977b849cb1dbfb796030b91444", "5c188c92a84ddffe2ab590ac7598bde2", 74160, 4212),
    "triviaqa": ("TriviaQA-web", "e18f586152612a9358c22f5536bfd32a", "5c9fdc633dfe196f1b428c81205fd82f",
                 61688, 7785),
    "searchqa": ("SearchQA", "612245315e6e7c4d8446e5fcc3dc1086", "9217ad3f6925c384702f2a4e6d520c38",
                 117384, 16980),
    "hotpotqa": ("HotpotQA", "d212c7b3fc949bd0dc47d124e8c34907", "125a96846c830381a8acff110ff6bd84", 72928, 5904),
    "naturalquestions": ("NaturalQuestionsShort", "e27d27bf7c49eb5ead43cef3f41de6be",
                         "c0347eebbca02d10d1b07b9a64efe61d", 104071, 12836),
    "drop": ("DROP", None, "070eb2ac92d2b2fc1b99abeda97ac37a", None, 1503),
    "race": ("RACE", None, "ba8063647955bbb3ba63e9b17d82e815", None, 674),
    "duorc": ("DuoRC.ParaphraseRC", None, "b325c0ad2fa10e699136561ee70c5ddd", None, 1501),
    "relationextraction": ("RelationExtraction", None, "266be75954fcb31b9dbfa9be7a61f088", None, 2948),
    "textbookqa": ("TextbookQA", None, "8b52d21381d841f8985839ec41a6c7f7", None, 1503),
    "bioasq": ("BioASQ", None, "70752a39beb826a022ab21353cb66e54", None, 1504),
}
SHA256 = {"mrqa/dev/SQuAD.jsonl.gz": "5afa4b088adf297fc29374ddf2d44d974b8837380e2554e62edf258fee5c32ee"}
# Questions per split in the official README, by task name (used by tests on real files).
OFFICIAL_COUNTS = {
    f"mrqa.{name}": {k: v for k, v in (("train", row[3]), ("validation", row[4])) if v is not None}
    for name, row in DATASETS.items()
}


def iter_jsonl_gz(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, record) for each record line of an MRQA file; the header line is checked, not yielded."""
    path = require_file(path)
    number = 0
    try:
        with gzip.open(path, "rb") as f:
            for number, raw in enumerate(f, start=1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise DataError(path, f"not valid UTF-8 ({exc.reason} at byte {exc.start} of the line)",
                                    line=number, fix=REDOWNLOAD) from None
                if not text.strip():
                    continue
                try:
                    record = json.loads(text)
                except json.JSONDecodeError as exc:
                    raise DataError(path, f"malformed JSON line ({exc.msg} at column {exc.colno})", line=number,
                                    fix=REDOWNLOAD) from None
                if number == 1:
                    if not (isinstance(record, dict) and "header" in record):
                        raise DataError(path, 'missing header: the first line must be {"header": {...}}', line=1,
                                        fix="use the official MRQA .jsonl.gz file, whose first line is the header")
                    continue
                yield number, record
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
        raise DataError(path, f"damaged gzip stream ({exc})", line=number + 1, fix=REDOWNLOAD) from None
    if number == 0:
        raise DataError(path, "empty file: the header line is missing", fix=REDOWNLOAD)


def read(split: str, files: Sequence[Path], options) -> Iterator[Example]:
    """One example per question, in file order."""
    for path in files:
        path = Path(path)
        for number, record in iter_jsonl_gz(path):
            try:
                context, qas = record["context"], record["qas"]
                for qa in qas:
                    answers = list(qa["answers"])
                    detected = qa.get("detected_answers") or []
                    answer = detected[0]["text"] if detected else (answers[0] if answers else None)
                    if answer is None:
                        raise KeyError("answers")
                    yield Example(id=qa["qid"], context=context, question=qa["question"], answer=answer,
                                  answers=answers or [answer])
            except (KeyError, TypeError, IndexError) as exc:
                raise DataError(path, f"malformed MRQA record (missing or bad {exc})", line=number,
                                fix="check the file is an official MRQA .jsonl.gz file") from None


def _sources(stem: str, train_md5: str | None, dev_md5: str) -> tuple[Source, ...]:
    out = []
    if train_md5 is not None:
        out.append(Source(path=f"mrqa/train/{stem}.jsonl.gz", url=URL.format("train", stem), md5=train_md5))
    dev = f"mrqa/dev/{stem}.jsonl.gz"
    if stem == "BioASQ":
        out.append(Source(path=dev, url=None, md5=dev_md5, note=BIOASQ_NOTE))
    else:
        out.append(Source(path=dev, url=URL.format("dev", stem), md5=dev_md5, sha256=SHA256.get(dev)))
    return tuple(out)


for _name, (_stem, _train_md5, _dev_md5, _n_train, _n_dev) in DATASETS.items():
    _splits = {"validation": (f"mrqa/dev/{_stem}.jsonl.gz",)}
    if _train_md5 is not None:
        _splits = {"train": (f"mrqa/train/{_stem}.jsonl.gz",), **_splits}
    register(Task(
        name=f"mrqa.{_name}",
        description=f"MRQA 2019 {_stem} ({'in-domain' if _train_md5 else 'out-of-domain, validation only'})",
        metric="nf1",
        sources=_sources(_stem, _train_md5, _dev_md5),
        splits=_splits,
        read=read,
        eval_only=_train_md5 is None,
        group="mrqa",
    ))
