"""QA-SRL (wiki domain): semantic role labeling cast as question answering.

Source: ``wiki1.{train,dev,test}.qa`` of QA-SRL 1.0 (He et al., 2015). Each block of the file is a
header line (``WIKI1_<n>\\t<k>``), the tokenized sentence, then per predicate a line
``<index>\\t<verb>\\t<count>`` followed by its question lines: seven tab-separated question slots
(``_`` = empty), ``?``, and the answers separated by ``###``. Blocks are separated by blank lines.

Cast as decaNLP does (reference §1):
- context: the sentence, cleaned (PTB brackets restored, spacing before closing punctuation and
  after opening punctuation removed, quotes dropped), see `clean`;
- question: the slots before ``?`` with every ``" _"`` removed, plus ``?``, cleaned;
- answer: the first answer (before ``###``), cleaned; all answers are kept for scoring;
- answers whose case differs from the sentence are patched so that they occur in it (first letter
  lowered or raised, five hand-made fixes of the original, or the whole answer lowercased).

decaNLP applies its punctuation replacements in the iteration order of a Python set; here the order
is fixed (the replacements do not interact on real sentences). An answer that cannot be patched into
the context (the original stops in a debugger) is yielded as a `Dropped`.
Paper Table 1: 6,414 / 2,183 / 2,201.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import iter_lines

URL = "https://dada.cs.washington.edu/qasrl/data/wiki1.{}.qa"
SHA256 = {
    "train": "f927417e94e67b7ae17e33dd882989a5556d7ff37376f8bf5c78ece7d17a6c64",
    "dev": "caa94beaaf22304422cdc1a2fd8732b1a47401c9555a81e1f4da81e0a7557a8b",
    "test": "b43a998344fbd520955fb8f0f7b3691ace363daa8628552cf5cf5c8d84df6cca",
}
FILES = {"train": "train", "validation": "dev", "test": "test"}

_PTB = (("-LRB-", "("), ("-RRB-", ")"), ("-LAB-", "<"), ("-RAB-", ">"), ("-AMP-", "&"), ("%pw", " "))
_CLOSING = (" .", " ,", " ;", " !", " ?", " :", " )", " 'll", " n't ", " %", " 't", " 's", " 'm", " 'd", " 're")
_OPENING = ("( ", "$ ")
_DROPPED = ("``", "`", "''", "\u201c", "\u201d", " '")

# The original's hand-made fixes for answers whose wording differs from the sentence:
# (substring identifying the answer, the answer as it occurs in the sentence).
_ANSWER_FIXES = (
    ("Darcy Burner", "Darcy Burner and other 2008 Democratic congressional candidates, "
                     "in cooperation with some retired national security officials"),
    ("E Street Band", "plan to work with the E Street Band again in the future"),
    ("an electric sender", "an electronic sender"),
    ("the US army", "the US Army"),
    ("Rather than name the", "rather die than name the cause of his disease to his father"),
)


def clean(text: str) -> str:
    """decaNLP's QA-SRL detokenization of a sentence, question or answer."""
    s = " ".join(text.split())
    for old, new in _PTB:
        s = s.replace(old, new)
    for p in _CLOSING:
        s = s.replace(p, p.lstrip())
    for p in _OPENING:
        s = s.replace(p, p.rstrip())
    s = s.replace(" - ", "-")
    for p in _DROPPED:
        s = s.replace(p, "")
    return " ".join(s.split())


def patch_case(answer: str, context: str) -> str | None:
    """The answer as it occurs in the context (decaNLP's case patching), or None if it does not."""
    if answer in context:
        return answer
    lower, upper = answer[0].lower() + answer[1:], answer[0].upper() + answer[1:]
    if lower in context:
        return lower
    if upper in context:
        return upper
    for key, fixed in _ANSWER_FIXES:
        if key in answer:
            return fixed if fixed in context else None
    return answer.lower() if answer.lower() in context else None


def _is_int(token: str) -> bool:
    try:
        int(token)
    except ValueError:
        return False
    return True


def read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """One example per question line, in file order; ids ``<sentence id>-<question index>``."""
    (path,) = files
    context = sentence_id = None
    question_index = 0
    for number, raw in iter_lines(path):
        line = " ".join(raw.split())
        if not line:
            context = None  # a blank line ends the block
            continue
        tokens = line.split()
        if "WIKI1" in line.split("_")[0]:
            sentence_id = tokens[0]
            continue
        if _is_int(tokens[0]) and len(tokens) <= 3:
            continue  # predicate line: <index> <verb> <number of questions>
        if context is None:
            context, question_index = clean(line), 0
            block_id = sentence_id or f"line{number}"
            sentence_id = None
            continue
        parts = line.split("?")
        if len(parts) != 2:
            raise DataError(path, f"malformed question line {raw!r}: expected 7 question slots, '?', then answers "
                                  "separated by '###'", line=number, fix="check the file is the official QA-SRL wiki1 file")
        question = clean(parts[0].replace(" _", "") + "?")
        answers = [clean(a) for a in parts[1].split("###")]
        example_id = f"{block_id}-{question_index}"
        question_index += 1
        patched = [patch_case(a, context) for a in answers]
        if any(a is None for a in patched):
            bad = answers[patched.index(None)]
            yield Dropped(id=example_id, reason="answer_not_in_context", detail=f"{path.name}:{number}: {bad!r}")
            continue
        yield Example(id=example_id, context=context, question=question, answer=patched[0], answers=patched)


register(Task(
    name="srl",
    description="QA-SRL, wiki domain (semantic role labeling)",
    metric="nf1",
    sources=tuple(Source(path=f"srl/wiki1.{f}.qa", url=URL.format(f), sha256=SHA256[f]) for f in SHA256),
    splits={split: (f"srl/wiki1.{f}.qa",) for split, f in FILES.items()},
    read=read,
    paper_counts={"train": 6414, "validation": 2183, "test": 2201},
))
