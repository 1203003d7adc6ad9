"""Helpers shared by the task tests under tests/deca/tasks/."""
from __future__ import annotations

from pathlib import Path

from deca.registry import Dropped, Task, get_task
from deca.text import detokenize
from pipelines.rows import to_row


def read_split(task: Task, split: str, root: Path, options=None) -> tuple[list, list]:
    """(examples, drops) of one split read from the raw files under `root`."""
    examples, drops = [], []
    options = options if options is not None else task.make_options()
    for item in task.read(split, task.files(split, root), options):
        (drops if isinstance(item, Dropped) else examples).append(item)
    return examples, drops


def read_records(name: str, split: str, root: Path) -> list:
    """Every record (examples and drops, in file order) of one split of task `name`, raw files under `root`."""
    task = get_task(name)
    return list(task.read(split, task.files(split, root), task.make_options()))


def row_of(task: Task, split: str, example, options=None) -> dict:
    """The processed row of `example`, checking that every token list detokenizes to its text field."""
    row = to_row(task, split, example, options)
    assert isinstance(row, dict), row
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
        assert row[field] == " ".join(row[field].split()).lower()
    return row


def bad_file(tmp_path: Path, task: Task, split: str, data: bytes) -> list[Path]:
    """Write `data` where the task's (single) raw file of `split` would be under `tmp_path`."""
    (rel,) = task.splits[split]
    path = tmp_path / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return [path]


def assert_refused(tmp_path: Path, task: Task, split: str, data: bytes, match: str, options=None) -> None:
    """Reading `data` as the task's raw file of `split` raises a DataError matching `match`."""
    import pytest

    from deca.errors import DataError

    with pytest.raises(DataError, match=match):
        list(task.read(split, bad_file(tmp_path, task, split, data), options))
