"""Streaming readers of raw text and JSON files that turn every defect into a `DataError`.

Shared by the task modules: each error names the file, the line where there is one, and a fix.
Files are read in binary and decoded line by line so that an invalid UTF-8 byte is reported on
the line that holds it (a text-mode reader decodes in chunks and reports it lines later).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

from deca.errors import DataError
from deca.text import SURROGATE_FIX, lone_surrogate, may_hold_surrogates

REDOWNLOAD = "delete the file and run `deca download` again (or copy it again from the mirror)"


def require_file(path: str | Path, fix: str = REDOWNLOAD) -> Path:
    """`path` as a Path; a DataError naming it when it is not an existing file."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, "file not found" if not path.exists() else "not a regular file", fix=fix)
    return path


def iter_lines(path: str | Path, fix: str = REDOWNLOAD) -> Iterator[tuple[int, str]]:
    """(line number from 1, text without the line ending) for each line of a UTF-8 file."""
    path = require_file(path, fix)
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(path, f"not valid UTF-8 ({exc.reason} at byte {exc.start} of the line)",
                                line=lineno, fix=fix) from None
            yield lineno, text.rstrip("\r\n")


def iter_jsonl(path: str | Path, fix: str = REDOWNLOAD) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line of a JSON-lines file."""
    for lineno, line in iter_lines(path, fix):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(path, f"invalid JSON ({exc.msg} at column {exc.colno}); the line may be truncated",
                            line=lineno, fix=fix) from None
        except RecursionError:
            raise DataError(path, "JSON nested too deeply", line=lineno, fix=fix) from None
        problem = lone_surrogate(value) if may_hold_surrogates(line) else None
        if problem:
            raise DataError(path, problem, line=lineno, fix=SURROGATE_FIX)
        yield lineno, value


def iter_json_objects(path: str | Path, fix: str = REDOWNLOAD) -> Iterator[tuple[int, dict]]:
    """Like `iter_jsonl`, but every line must hold a JSON object."""
    for lineno, value in iter_jsonl(path, fix):
        if not isinstance(value, dict):
            raise DataError(path, f"expected a JSON object on each line, got {type(value).__name__}",
                            line=lineno, fix=fix)
        yield lineno, value


def load_json(path: str | Path, fix: str = REDOWNLOAD) -> Any:
    """Parse a whole JSON document (for the few corpora shipped as one small JSON file)."""
    path = require_file(path, fix)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(path, f"not valid UTF-8 ({exc.reason})", line=line, fix=fix) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(path, f"invalid JSON ({exc.msg} at column {exc.colno}); the file may be truncated",
                        line=exc.lineno, fix=fix) from None


def field(record: dict, key: str, kind: type | tuple[type, ...], path: str | Path, line: int | None,
          fix: str = REDOWNLOAD) -> Any:
    """record[key], checked to be of type `kind`; a DataError naming the key otherwise."""
    if key not in record:
        raise DataError(path, f"record has no {key!r} field", line=line, fix=fix)
    value = record[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise DataError(path, f"field {key!r} should be {names}, got {value!r:.60}", line=line, fix=fix)
    return value
