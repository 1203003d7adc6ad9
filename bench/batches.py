"""The benchmarks' inputs, as the paper's training and decoding see them: token rows of real SQuAD and SST
examples, training batches cut by the paper's token budget, the decoding batch around the median context
length, and a generative vocabulary built from those rows (50,000 tokens in the benchmarks).

A row is a dict of `context_tokens`, `question_tokens` and `answer_tokens` (lower-cased revtok tokens,
deca.text.tokenize); a batch is a list of rows, which mqan.batch.collate turns into tensors.

bench/model.py, bench/cpu_profile.py and bench/gpu_profile.py read and batch through here, and so does the
harness in ../shared/speedcheck (through bench.model, which re-exports these), so that every measurement of
the model runs on the same batches.
"""
from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

from deca.text import normalize_space, tokenize
from mqan.vocab import Vocab

SHARED = Path(__file__).resolve().parents[2] / "shared" / "corpora"  # the corpora mirror beside the checkout


def _row(context: str, question: str, answer: str) -> dict:
    c, q, a = (normalize_space(x).lower() for x in (context, question, answer))
    return {"context_tokens": tokenize(c), "question_tokens": tokenize(q), "answer_tokens": tokenize(a)}


def read_task(name: str, split: str, raw: Path, limit: int, seed: int) -> list[dict]:
    """Up to `limit` random examples of a task split as token rows: via the task registry when the task is
    registered (deca.tasks), else by parsing the official SQuAD JSON / SST CSV directly."""
    from deca.registry import Dropped, all_tasks

    task = all_tasks().get(name)
    if task is not None:
        examples = [e for e in task.read(split, task.files(split, raw), task.make_options()) if not isinstance(e, Dropped)]
        triples = [(e.context, e.question, e.answer) for e in examples]
    elif name == "squad":
        data = json.loads((raw / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))["data"]
        triples = [(p["context"], qa["question"], qa["answers"][0]["text"])
                   for art in data for p in art["paragraphs"] for qa in p["qas"]]
    else:
        import csv

        f = {"train": "train", "validation": "dev"}[split]
        with open(raw / "sst" / f"{f}_binary_sent.csv", encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        triples = [(r[-1], "Is this review negative or positive?", ["negative", "positive"][int(r[0])]) for r in rows]
    random.Random(seed).shuffle(triples)
    return [_row(*t) for t in triples[:limit]]


def cost(r: dict) -> int:
    return len(r["context_tokens"]) + len(r["question_tokens"]) + 5 * len(r["answer_tokens"])


def budget_batches(rows: list[dict], budget: int) -> list[list[dict]]:
    """Sort by length (as the bucketing pools do), then cut consecutive batches within the budget."""
    rows = sorted(rows, key=lambda r: (len(r["context_tokens"]), len(r["answer_tokens"])))
    batches, cur, total = [], [], 0
    for r in rows:
        if cur and total + cost(r) > budget:
            batches.append(cur)
            cur, total = [], 0
        cur.append(r)
        total += cost(r)
    return batches + ([cur] if cur else [])


def middle(rows: list[dict], n: int) -> list[dict]:
    """The `n` rows around the median context length: validation batches come from length-sorted data."""
    rows = sorted(rows, key=lambda r: len(r["context_tokens"]))
    start = max(0, (len(rows) - n) // 2)
    return rows[start:start + n]


def make_vocab(rows: list[dict], size: int) -> Vocab:
    counts = Counter(t for r in rows for k in ("context_tokens", "question_tokens", "answer_tokens") for t in r[k])
    tokens = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][: size - 4]
    tokens += [f"<filler {i}>" for i in range(size - 4 - len(tokens))]
    return Vocab.from_tokens(tokens, size)
