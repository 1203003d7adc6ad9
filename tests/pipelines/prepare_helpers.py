"""A tiny fake task for the prepare pipeline tests: drops in the reader and in the row hook, an option,
and a way to fail mid-file, so that routing, counting and atomicity can be checked exactly.

Raw format (``fake/<split>.tsv``): one ``<id>\\t<label>\\t<text>`` per line. A line whose text is
``BAD`` raises a DataError (file + line); label ``skip`` is dropped by the reader; a text containing
``drop`` is dropped by the row hook; contexts longer than ``max_tokens`` are dropped by the row hook.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from deca import registry
from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task

FAKE = "fake.drops"


@dataclass(frozen=True)
class FakeOptions:
    max_tokens: int = 1000


def fake_read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    (path,) = files
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            ident, label, text = line.rstrip("\n").split("\t")
            if text == "BAD":
                raise DataError(path, "bad line for testing", line=number, fix="remove it")
            if label == "skip":
                yield Dropped(id=ident, reason="skipped_label", detail=f"line {number}")
                continue
            yield Example(id=ident, context=text, question="What is the label?", answer=label)


def fake_hook(row: dict, split: str, options: FakeOptions) -> dict | Dropped:
    if "drop" in row["context"]:
        return Dropped(id=row["id"], reason="hook_drop", detail="context says drop")
    if len(row["context_tokens"]) > options.max_tokens:
        return Dropped(id=row["id"], reason="too_long", detail=f"{len(row['context_tokens'])} tokens")
    return row


FAKE_TASK = Task(
    name=FAKE, description="fake task for tests", metric="em",
    sources=tuple(Source(path=f"fake/{s}.tsv", url=None) for s in ("train", "validation", "test")),
    splits={s: (f"fake/{s}.tsv",) for s in ("train", "validation", "test")},
    read=fake_read, options=FakeOptions, row_hook=fake_hook, group="test",
)

TRAIN = [
    ("t1", "yes", "The Cat sat on the mat."),
    ("t2", "no", "A dog, barking loudly!"),
    ("t3", "skip", "never seen"),
    ("t4", "yes", "please drop this one"),
    ("t5", "no", "Zebra zebra ZEBRA."),
    ("t6", "yes", "one two three four five six seven eight nine ten eleven"),
]
VALIDATION = [("v1", "yes", "only-in-validation zzvalidonly"), ("v2", "no", "cat dog")]
TEST = [("x1", "drop", "drop everything")]  # every test example is dropped: an empty split


def write_fake_corpus(root: Path, train=TRAIN, validation=VALIDATION, test=TEST) -> Path:
    """Write the fake raw files under ``root/fake`` and return `root`."""
    (root / "fake").mkdir(parents=True, exist_ok=True)
    for split, lines in (("train", train), ("validation", validation), ("test", test)):
        (root / "fake" / f"{split}.tsv").write_text("".join("\t".join(r) + "\n" for r in lines), encoding="utf-8")
    return root


def register_fake(monkeypatch, task: Task = FAKE_TASK) -> Task:
    """Register `task` for one test (removed afterwards)."""
    registry.all_tasks()  # load the real tasks first
    monkeypatch.setitem(registry._REGISTRY, task.name, task)
    return task
