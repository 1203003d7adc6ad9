"""Miniature processed data for training tests, built from the bundled fixture corpora.

`pipelines.rows.to_row` on each fixture task's examples, written with pyarrow in the processed layout
(data/processed/<task>/<split>/part-00000.parquet) plus a vocab.txt in the shared format, so these
tests do not depend on the Beam pipeline.
"""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from deca.registry import Dropped, all_tasks
from deca.schema import EXAMPLE_SCHEMA, split_dir
from pipelines.rows import to_row
from tests.conftest import FIXTURE_CORPORA

# Small tasks first: the training tests take the first few of these that have fixtures.
PREFERRED = ("sst", "schema", "woz.en", "srl", "zre", "multinli.in.out", "wikisql", "squad")


def write_rows(processed: Path, task: str, split: str, rows: list[dict]) -> None:
    out = split_dir(processed, task, split)
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=EXAMPLE_SCHEMA), out / "part-00000.parquet")


def write_vocab(path: Path, counts: Counter) -> None:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    path.write_text("".join(f"{json.dumps(t)}\t{c}\n" for t, c in items), encoding="utf-8")


def build_processed(root: Path) -> tuple[Path, Path, list[str]]:
    """Process every registered task whose fixture files exist; returns (processed dir, vocab, tasks)."""
    processed = root / "processed"
    counts: Counter = Counter()
    done = []
    for name, task in all_tasks().items():
        if task.eval_only or not {"train", "validation"} <= set(task.splits):
            continue
        if not all(p.exists() for s in ("train", "validation") for p in task.files(s, FIXTURE_CORPORA)):
            continue
        options = task.make_options()
        try:
            for split in ("train", "validation"):
                rows = [r for ex in task.read(split, task.files(split, FIXTURE_CORPORA), options)
                        if not isinstance(ex, Dropped)
                        for r in [to_row(task, split, ex, options)] if not isinstance(r, Dropped)]
                if not rows:
                    raise ValueError("empty split")
                write_rows(processed, name, split, rows)
                if split == "train":
                    for r in rows:
                        for col in ("context_tokens", "question_tokens", "answer_tokens"):
                            counts.update(r[col])
        except Exception:  # a fixture still being written by another helper: leave that task out
            continue
        done.append(name)
    vocab = root / "vocab.txt"
    write_vocab(vocab, counts)
    return processed, vocab, done


@pytest.fixture(scope="session")
def mini_data(tmp_path_factory) -> tuple[Path, Path, list[str]]:
    """(processed dir, vocab path, tasks with data), tasks ordered small-first as in PREFERRED."""
    processed, vocab, tasks = build_processed(tmp_path_factory.mktemp("mini"))
    if "sst" not in tasks:
        pytest.skip("the sst fixture corpus is missing")
    order = {t: i for i, t in enumerate(PREFERRED)}
    return processed, vocab, sorted(tasks, key=lambda t: (order.get(t, len(order)), t))
