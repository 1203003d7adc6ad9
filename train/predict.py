"""Asking a trained model your own questions: `deca predict` (train/predict_cli.py) and the decoding that
`deca evaluate` shares.

A request is ``{"context": ..., "question": ...[, "id": ...]}``; its text is prepared exactly as
`deca prepare` prepares the corpora (deca.text.prepare_text: whitespace normalized, lowercased, revtok).
An answer says, for every token it chose, which source gave it: the vocabulary (the generative
softmax), the context pointer or the question pointer, with the three source weights of Eq. 12-13
(gamma, (1-gamma) lambda, (1-gamma)(1-lambda); they sum to 1) and each source's share of the token's
probability.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Iterable, Sequence

import torch

from deca.errors import DataError
from deca.text import prepare_text
from train.batch import collate
from train.vocab import EOS_ID, INIT_ID, PAD_ID

SOURCES = ("vocabulary", "context", "question")
FIX = 'each line must be a JSON object {"context": "...", "question": "..."} (optionally "id")'


@dataclass
class Answer:
    """One decoded answer, token by token."""

    text: str
    tokens: list[str] = field(default_factory=list)
    weights: list[list[float]] = field(default_factory=list)  # per token: the three source weights
    shares: list[list[float]] = field(default_factory=list)  # per token: p(token) from each source

    def to_json(self, request_id: str | None = None) -> dict:
        """The JSON line `deca predict` writes."""
        steps = [{"token": tok.strip(), "source": SOURCES[max(range(3), key=share.__getitem__)],
                  "weights": dict(zip(SOURCES, (round(w, 6) for w in weights))),
                  "probability": round(sum(share), 6)}
                 for tok, weights, share in zip(self.tokens, self.weights, self.shares)]
        return {**({"id": request_id} if request_id is not None else {}), "answer": self.text, "tokens": steps}


def request_row(context: str, question: str, request_id: str = "0") -> dict:
    """A request as a processed row (no answer)."""
    return {"id": request_id, "context_tokens": prepare_text(context)[1],
            "question_tokens": prepare_text(question)[1], "answer_tokens": []}


def read_requests(stream: Iterable[str], name: str) -> list[dict]:
    """Rows of a JSON-lines request stream; a DataError names the line and the fix of a bad one."""
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
        rows.append(request_row(record["context"], record["question"], rid))
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


def answer_rows(model, vocab, rows: Sequence[dict], batch_size: int, max_len: int | None, device,
                bar=None, explain: bool = False, weights: bool = False) -> list[Answer]:
    """Greedy answers for `rows`, in their order (batches hold examples of similar length).

    `explain`: each token's source weights and each source's probability of it (Answer.weights, .shares);
    `weights`: the source weights only, which greedy decoding computes anyway (nothing more is computed)."""
    order = sorted(range(len(rows)),
                   key=lambda i: (len(rows[i]["context_tokens"]) + len(rows[i]["question_tokens"]), i))
    answers: list[Answer | None] = [None] * len(rows)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            out = model.greedy(collate([rows[i] for i in idx], vocab, device), max_len, explain=explain)
            if explain or weights:  # one copy per batch, not one device sync per answer
                out = dataclasses.replace(out, ids=out.ids.cpu(), lengths=out.lengths.cpu(),
                                          source_weights=out.source_weights.cpu(),
                                          contributions=out.contributions.cpu() if explain else None)
            for j, i in enumerate(idx):
                answers[i] = _answer(out, j, explain, weights)
            if bar is not None:
                bar.update(len(idx))
    return answers  # type: ignore[return-value]


def _answer(out, j: int, explain: bool, weights: bool = False) -> Answer:
    text = out.texts[j].lower()
    if not (explain or weights):
        return Answer(text)
    ids = out.ids[j, : int(out.lengths[j])].tolist()
    steps = [s for s, i in enumerate(ids) if i not in (PAD_ID, INIT_ID, EOS_ID)]  # the steps of out.tokens[j]
    shares = out.contributions[j, steps].tolist() if explain else []
    return Answer(text, out.tokens[j], out.source_weights[j, steps].tolist(), shares)
