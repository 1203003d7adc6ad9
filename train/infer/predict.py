"""Asking a trained model your own questions: the requests of `deca predict` (train/infer/predict_cli.py)
and `deca serve`, and the device they run on.

A request is ``{"context": ..., "question": ...[, "id": ...]}``; its text is prepared exactly as
`deca prepare` prepared the model's training data (deca.text.prepare_text: whitespace normalized, revtok,
lowercased when the model was trained on lowercased text: `lowercase_of` reads that from the checkpoint).
Answers come from train.mqan.decode (the same batched greedy loop as validation and `deca evaluate`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Iterable, Mapping

import torch

from deca.errors import DataError
from deca.text import prepare_text

FIX = 'each line must be a JSON object {"context": "...", "question": "..."} (optionally "id")'


def pick_device(name: str) -> torch.device:
    """`auto` is CUDA when there is one, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def lowercase_of(extra: Mapping) -> bool:
    """Whether the model of a checkpoint (its `extra`) was trained on lowercased text (prepare.lowercase,
    recorded with the params of the run; True for a checkpoint that does not record it, the default)."""
    return bool(((extra.get("params") or {}).get("prepare") or {}).get("lowercase", True))


def request_row(context: str, question: str, request_id: str = "0", lowercase: bool = True) -> dict:
    """A request as a processed row (no answer), its text prepared as the model's training data was."""
    return {"id": request_id, "context_tokens": prepare_text(context, lowercase)[1],
            "question_tokens": prepare_text(question, lowercase)[1], "answer_tokens": []}


def read_requests(stream: Iterable[str], name: str) -> list[dict]:
    """The requests ({"id", "context", "question"}) of a JSON-lines stream; a DataError names the line and the fix
    of a bad one. `request_row` makes each a row once the model (and so its text preparation) is known."""
    rows, seen = [], set()
    for lineno, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(name, f"not valid JSON ({exc.msg})", line=lineno, fix=FIX) from None
        if not isinstance(record, dict) or not all(isinstance(record.get(k), str) for k in ("context", "question")):
            raise DataError(name, "needs string fields 'context' and 'question'", line=lineno, fix=FIX)
        rid = str(record.get("id", lineno))
        if rid in seen:
            raise DataError(name, f"id {rid!r} given twice", line=lineno, fix="give every request its own id")
        seen.add(rid)
        rows.append({"id": rid, "context": record["context"], "question": record["question"]})
    if not rows:
        raise DataError(name, "no requests in it", fix=FIX)
    return rows


def open_requests(path: str) -> tuple[IO[str], str]:
    """(text stream, name for errors) of a requests file, `-` for standard input."""
    import sys

    if path == "-":
        return sys.stdin, "<stdin>"
    if not Path(path).is_file():
        raise DataError(path, "requests file not found", fix="give a JSON-lines file, or - for standard input")
    return open(path, encoding="utf-8"), path
