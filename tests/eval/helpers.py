"""Tiny processed splits written directly with pyarrow (no Beam), for scoring tests."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deca.schema import EXAMPLE_SCHEMA, split_dir
from deca.text import tokenize


def row(task: str, split: str, id: str, answer: str, answers: list[str] | None = None, gold: dict | None = None,
        context: str = "some context .", question: str = "a question ?") -> dict:
    """One row of the processed schema (lowercased text, revtok tokens)."""
    return {
        "id": id, "task": task, "split": split, "context": context, "question": question,
        "answer": answer, "answers": answers if answers is not None else [answer],
        "context_tokens": tokenize(context), "question_tokens": tokenize(question),
        "answer_tokens": tokenize(answer), "gold": None if gold is None else json.dumps(gold, sort_keys=True),
    }


def write_split(processed: Path, task: str, split: str, rows: list[dict], shards: int = 2) -> Path:
    """Write `rows` as `shards` Parquet files under <processed>/<task>/<split>/."""
    out = split_dir(processed, task, split)
    out.mkdir(parents=True, exist_ok=True)
    size = max(1, -(-len(rows) // shards))
    for k in range(0, len(rows), size):
        table = pa.Table.from_pylist(rows[k:k + size], schema=EXAMPLE_SCHEMA)
        pq.write_table(table, out / f"part-{k // size:05d}-of-{shards:05d}.parquet")
    return out


def write_predictions(path: Path, predictions: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in predictions.items()),
                    encoding="utf-8")
    return path
