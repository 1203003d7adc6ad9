"""The fixtures the tests share, written once (issue 43): a tiny MQAN and its vocabulary, a planted pickle
payload, tiny processed splits and a `deca evaluate` predictions directory. The tests of every package import
them from here, the fault tests (tests/faults/) too; no bench script uses them, so they live with the tests
(bench/ never imports tests/: tests/test_layout.py). Heavy libraries (torch, pyarrow) are imported by the
functions that need them: importing this module costs what deca.config and mqan.vocab cost.
"""
from __future__ import annotations

import errno
import json
import os
from pathlib import Path

from deca.config import ModelConfig
from mqan.vocab import Vocab

# ---------------------------------------------------------------- a tiny MQAN (tests/mqan/, tests/faults/)
GEN = [f" w{i} " for i in range(10)] + [" copy ", " or ", " ? ", " good ", " bad "]
OOV = [f" x{i} " for i in range(30)]  # in the full vocabulary, outside the generative one
VOCAB = Vocab.from_tokens(GEN + OOV, max_generative=4 + len(GEN))


def tiny_cfg(variant="mqan", **kw) -> ModelConfig:
    """A ModelConfig of `variant` small enough to train in a test (`kw` overrides its fields)."""
    base = dict(variant=variant, dimension=16, ff_hidden=12, heads=2, transformer_layers=2, dropout=0.2,
                embedding_dim=8, word_vectors=None, char_ngram_dim=0, max_generative_vocab=len(GEN) + 4,
                max_answer_length=6)
    return ModelConfig(**{**base, **kw})


def tiny_model(variant="mqan", seed=0, **kw):
    """An untrained model of tiny_cfg over VOCAB, its weights drawn after torch.manual_seed(seed)."""
    import torch

    from mqan.model import build_model

    torch.manual_seed(seed)
    return build_model(tiny_cfg(variant, **kw), VOCAB)


# ---------------------------------------------------------------- a planted pickle payload (issue 34)
class Planted:
    """Unpickled with code allowed, it creates the folder `marker` (os.mkdir): the test checks it does not."""

    def __init__(self, marker: str | Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


# ---------------------------------------------------------------- tiny processed splits (no Beam)
def row(task: str, split: str, id: str, answer: str, answers: list[str] | None = None, gold: dict | None = None,
        context: str = "some context .", question: str = "a question ?") -> dict:
    """One row of the processed schema (lowercased text, revtok tokens)."""
    from deca.text import tokenize

    return {
        "id": id, "task": task, "split": split, "context": context, "question": question,
        "answer": answer, "answers": answers if answers is not None else [answer],
        "context_tokens": tokenize(context), "question_tokens": tokenize(question),
        "answer_tokens": tokenize(answer), "gold": None if gold is None else json.dumps(gold, sort_keys=True),
    }


def write_split(processed: Path, task: str, split: str, rows: list[dict], shards: int = 2) -> Path:
    """Write `rows` as `shards` Parquet files under <processed>/<task>/<split>/ (directly with pyarrow)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deca.schema import EXAMPLE_SCHEMA, split_dir

    out = split_dir(processed, task, split)
    out.mkdir(parents=True, exist_ok=True)
    size = max(1, -(-len(rows) // shards))
    for k in range(0, len(rows), size):
        table = pa.Table.from_pylist(rows[k:k + size], schema=EXAMPLE_SCHEMA)
        pq.write_table(table, out / f"part-{k // size:05d}-of-{shards:05d}.parquet")
    return out


# ---------------------------------------------------------------- a `deca evaluate` predictions directory
def write_run(folder, task: str, correct, answers, questions=None, shuffle: int | None = None):
    """A predictions directory as `deca evaluate` writes it: one record per example with its statistics."""
    import numpy as np

    folder.mkdir(parents=True, exist_ok=True)
    order = list(range(len(correct)))
    if shuffle is not None:
        np.random.default_rng(shuffle).shuffle(order)
    lines = [json.dumps({"id": f"{task}/{i}", "prediction": "x", "answer": answers[i],
                         "question": (questions or [""] * len(answers))[i], "stats": [100.0 * bool(correct[i])]})
             for i in order]
    (folder / f"{task}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


class FillingFile:
    """A file on a disk with `room` bytes left (none: a full disk): a write past them fails with ENOSPC, naming no
    file, as write() does."""

    def __init__(self, path, mode="wb", room=0):
        self.f, self.room = open(path, mode), room

    def write(self, data):
        self.room -= len(data)
        if self.room < 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.f.write(data)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()
