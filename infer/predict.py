"""Asking a trained model your own questions: the requests of `deca predict` (infer/predict_cli.py)
and `deca serve`, and the device they run on.

A request is ``{"context": ..., "question": ...[, "id": ...]}``; its text is prepared exactly as
`deca prepare` prepared the model's training data (deca.text.prepare_text: whitespace normalized, revtok,
lowercased when the model was trained on lowercased text: `lowercase_of` reads that from the checkpoint).
Answers come from mqan.decode (the same batched greedy loop as validation and `deca evaluate`).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Iterable, Mapping

import torch

from deca.errors import ConfigError, DataError
from deca.io import json_line
from deca.text import prepare_text
from infer.limits import InputLimits

FIX = 'each line must be a JSON object {"context": "...", "question": "..."} (optionally "id")'


DEVICES = "auto, cpu, cuda or cuda:N"


def pick_device(name: str, option: str = "--device") -> torch.device:
    """The device `name` names: `auto` is CUDA when there is one, else the CPU. A ConfigError names `option`
    for anything else than auto, cpu, cuda or cuda:N, and for CUDA on a machine without it."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind, _, index = name.partition(":")
    if kind not in ("cpu", "cuda") or (index and (kind == "cpu" or not index.isdigit())):
        raise ConfigError(f"{option} {name}: not a device; use {DEVICES}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{option} {name}: CUDA is not available on this machine; use {option} cpu (or auto)")
    if kind == "cuda" and index and int(index) >= torch.cuda.device_count():
        raise ConfigError(f"{option} {name}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    return torch.device(name)


def check_answer_length(value: int | None, option: str = "--max-answer-length") -> int | None:
    """`value` when it is None (the model's own) or at least 1; else a ConfigError naming `option`."""
    if value is not None and value < 1:
        raise ConfigError(f"{option} must be at least 1 (decoding steps), got {value}")
    return value


def lowercase_of(extra: Mapping) -> bool:
    """Whether the model of a checkpoint (its `extra`) was trained on lowercased text (prepare.lowercase,
    recorded with the params of the run; True for a checkpoint that does not record it, the default)."""
    return bool(((extra.get("params") or {}).get("prepare") or {}).get("lowercase", True))


def request_row(context: str, question: str, request_id: str = "0", lowercase: bool = True) -> dict:
    """A request as a processed row (no answer), its text prepared as the model's training data was."""
    return {"id": request_id, "context_tokens": prepare_text(context, lowercase)[1],
            "question_tokens": prepare_text(question, lowercase)[1], "answer_tokens": []}


def read_requests(lines: Iterable[str], name: str, limits: InputLimits = InputLimits(), fix: str = FIX) -> list[dict]:
    """The requests ({"id", "context", "question"}) of JSON lines, each within `limits`; a DataError names the
    line, the field and the fix (`fix` where a request is malformed) of the first bad one. `request_row` makes
    each a row once the model (and so its text preparation) is known. A request without an id (or with
    "id": null) is named by its line number."""
    rows, seen = [], set()
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        record = json_line(line, name, lineno, fix)
        if not isinstance(record, dict):
            raise DataError(name, "not a JSON object", line=lineno, fix=fix)
        rows.append(checked_request(record, lineno, name, limits, fix))
        if rows[-1]["id"] in seen:
            raise DataError(name, f"id {rows[-1]['id']!r} given twice", line=lineno, fix="give every request its own id")
        seen.add(rows[-1]["id"])
    if not rows:
        raise DataError(name, "no requests in it", fix=fix)
    return rows


def checked_request(record: dict, lineno: int, name: str, limits: InputLimits, fix: str = FIX) -> dict:
    """{"id", "context", "question"} of one request, or a DataError naming the line and the field."""
    problems = limits.problems(record)
    if problems:
        field, message = problems[0]
        raise DataError(name, f"{field}: {message}", line=lineno, fix=fix if "required" in message else None)
    rid = record.get("id")
    return {"id": str(lineno) if rid is None else str(rid), "context": record["context"],
            "question": record["question"]}


def request_lines(path: str) -> tuple[list[str], str]:
    """(the lines, the name for errors) of a requests file, `-` for standard input; a DataError names the line of
    the first bytes that are not UTF-8."""
    if path == "-":
        data, name = sys.stdin.buffer.read(), "<stdin>"
    elif not Path(path).is_file():
        raise DataError(path, "requests file not found", fix="give a JSON-lines file, or - for standard input")
    else:
        data, name = Path(path).read_bytes(), path
    try:
        return data.decode("utf-8").splitlines(), name
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataError(name, f"not UTF-8 text (byte {exc.start:,}: {data[exc.start:exc.start + 1]!r})", line=line,
                        fix="save the file as UTF-8") from None
