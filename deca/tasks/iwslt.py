"""IWSLT 2016 English to German (TED talks): machine translation cast as question answering.

Source: WIT3's ``en-de.tgz`` of the 2016-01 release (the server is gone: see the Source note).
- train: ``train.tags.en-de.{en,de}``, line-aligned; lines holding one of WIT3's metadata tags
  (``<url``, ``<keywords``, ``<talkid``, ``<description``, ``<reviewer``, ``<translator``, ``<title``,
  ``<speaker``) are removed from each file first, as torchtext's IWSLT loader does;
- validation / test: the ``<seg>`` elements of the ``<doc>``s of ``IWSLT16.TED.tst2013`` / ``tst2014``.
context = the English text, question = ``Translate from English to German``, answer = the German text.
A pair with an empty side is skipped by decaNLP; here it is a counted drop (``empty_side``). Files whose
sides do not align (different line or segment counts, different segment ids) are errors naming both.
Paper Table 1: 196,884 / 993 / 1,305.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from itertools import zip_longest
from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import REDOWNLOAD, iter_lines, require_file

URL = "https://wit3.fbk.eu/archive/2016-01//texts/en/de/en-de.tgz"
QUESTION = "Translate from English to German"
METADATA_TAGS = ("<url", "<keywords", "<talkid", "<description", "<reviewer", "<translator", "<title", "<speaker")
DIR = "iwslt/en-de"
FILES = {
    "train": (f"{DIR}/train.tags.en-de.en", f"{DIR}/train.tags.en-de.de"),
    "validation": (f"{DIR}/IWSLT16.TED.tst2013.en-de.en.xml", f"{DIR}/IWSLT16.TED.tst2013.en-de.de.xml"),
    "test": (f"{DIR}/IWSLT16.TED.tst2014.en-de.en.xml", f"{DIR}/IWSLT16.TED.tst2014.en-de.de.xml"),
}
NOTE = ("wit3.fbk.eu no longer serves this archive. Get the IWSLT 2016 TED en-de release (texts/en/de/en-de.tgz "
        "of the 2016-01 WIT3 archive) from a colleague or an archived copy, and put it at <raw>/iwslt/en-de.tgz "
        "(or its extracted files under <raw>/iwslt/en-de/, or in a mirror with that layout).")


def iter_text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """(line number, stripped text) of a train.tags file, metadata lines left out."""
    for lineno, line in iter_lines(path, fix=REDOWNLOAD):
        if not any(tag in line for tag in METADATA_TAGS):
            yield lineno, line.strip()


def iter_segments(path: str | Path) -> Iterator[tuple[str, str, str, int]]:
    """(doc id, seg id, stripped text, line) of every <seg> directly inside a <doc>, streaming.

    The file is fed to the parser line by line, so each segment and each XML error has its line.
    """
    path = require_file(path)
    parser = ET.XMLPullParser(events=("start", "end"))
    stack: list[ET.Element] = []
    with open(path, "rb") as f:
        lineno = 0
        try:
            for lineno, raw in enumerate(f, 1):
                parser.feed(raw)
                for event, elem in parser.read_events():
                    if event == "start":
                        stack.append(elem)
                        continue
                    stack.pop()
                    if elem.tag == "seg" and stack and stack[-1].tag == "doc":
                        yield stack[-1].get("docid", ""), elem.get("id", ""), (elem.text or "").strip(), lineno
                        elem.clear()
                    elif elem.tag == "doc":
                        elem.clear()
            parser.close()
        except ET.ParseError as exc:
            line = exc.position[0] if exc.position[0] else lineno
            raise DataError(path, f"invalid XML ({exc})", line=line, fix=REDOWNLOAD) from None


def _mismatch(src: Path, trg: Path, what: str, n_src: int, n_trg: int) -> DataError:
    return DataError(src, f"the two sides do not align: {n_src} {what} here but {n_trg} in {trg}",
                     fix=f"{src.name} and {trg.name} must be the two sides of the same official release")


def read_train(src: Path, trg: Path) -> Iterator[Example | Dropped]:
    """Pairs of the line-aligned train.tags files (ids: train-<English line number>)."""
    for s, t in zip_longest(iter_text_lines(src), iter_text_lines(trg)):
        if s is None or t is None:
            raise _mismatch(src, trg, "text lines", sum(1 for _ in iter_text_lines(src)),
                            sum(1 for _ in iter_text_lines(trg)))
        yield _pair(f"train-{s[0]}", s[1], t[1], f"{src.name}:{s[0]} / {trg.name}:{t[0]}")


def read_xml(src: Path, trg: Path) -> Iterator[Example | Dropped]:
    """Pairs of <seg>s of two XML files, checked to carry the same doc and seg ids."""
    seen: set[str] = set()
    for s, t in zip_longest(iter_segments(src), iter_segments(trg)):
        if s is None or t is None:
            raise _mismatch(src, trg, "<seg> elements", sum(1 for _ in iter_segments(src)),
                            sum(1 for _ in iter_segments(trg)))
        if s[:2] != t[:2]:
            raise DataError(src, f"segment doc {s[0]!r} seg {s[1]!r} faces doc {t[0]!r} seg {t[1]!r} at line "
                            f"{t[3]} of {trg}", line=s[3],
                            fix="the two XML files must be the two sides of one test set")
        key = f"{s[0]}-{s[1]}"
        if key in seen:
            raise DataError(src, f"duplicate segment doc {s[0]!r} seg {s[1]!r}", line=s[3], fix=REDOWNLOAD)
        seen.add(key)
        yield _pair(key, s[2], t[2], f"{src.name}:{s[3]} / {trg.name}:{t[3]}")


def _pair(id: str, source: str, target: str, where: str) -> Example | Dropped:
    if not source or not target:
        return Dropped(id=id, reason="empty_side", detail=where)
    return Example(id=id, context=source, question=QUESTION, answer=target)


def read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """English/German pairs of one split (train.tags lines, or XML segments for validation and test)."""
    src, trg = (Path(f) for f in files)
    yield from (read_xml(src, trg) if src.suffix == ".xml" else read_train(src, trg))


register(Task(
    name="iwslt.en.de",
    description="IWSLT 2016 TED talks, English to German (machine translation)",
    metric="bleu",
    sources=(Source(path="iwslt/en-de.tgz", url=URL, extract_to="iwslt",
                    members=tuple(f for pair in FILES.values() for f in pair), note=NOTE),),
    splits=FILES,
    read=read,
    paper_counts={"train": 196884, "validation": 993, "test": 1305},
))
