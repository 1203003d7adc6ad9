"""Load (issues 24 and 34): the work of one request is bounded, and small calls are not starved by a large
one, also when each row of the large call is over the batch budget and runs alone."""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Callable

from bench.faults.case import Case, must
from bench.faults.tools import model_not_loaded, refused, server_refuses, tiny_checkpoint, write_requests

MB = 1_000_000


def long_context_refused(chars: int, in_file: bool) -> Callable[[Path], str]:
    """`deca predict` with a context of `chars` characters (--context, or a line of --input) is refused before
    its model loads, in well under a second."""
    def check(tmp: Path) -> str:
        context = "word " * (chars // 5)
        if in_file:
            path = write_requests(tmp, json.dumps({"context": context, "question": "what?"}).encode() + b"\n")
            asked, expect = ["--input", str(path)], f"{path}:1: context: at most 20,000 characters, got {chars:,}"
        else:
            asked, expect = ["--context", context, "--question", "what?"], f"--context: at most 20,000 " \
                                                                          f"characters, got {chars:,}"
        start = time.perf_counter()
        with model_not_loaded():
            line = refused(["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--device", "cpu", *asked], expect)
        seconds = time.perf_counter() - start
        must(seconds < 5, f"refused, but only after {seconds:.1f} s")
        return f"{line} ({seconds:.2f} s)"
    return check



def small_call_between(rows: int, tokens: int, max_batch: int, batch_tokens: int) -> Callable[[Path], str]:
    """The batching queue of `deca serve` answers a one-sentence call sent while a call of `rows` rows of
    `tokens` tokens waits, after at most two batches (the one being run, then the small call's); the model
    takes 50 ms a batch here. bench/serve_fairness.py measures it on a real server."""
    def check(tmp: Path) -> str:
        from infer.serve.engine import Batcher

        order: list[list[str]] = []

        def answer(batch: list[dict]) -> list[dict]:
            time.sleep(0.05)
            order.append([r["id"] for r in batch])
            return [{"id": r["id"]} for r in batch]

        def row(rid: str, n: int) -> dict:
            return {"id": rid, "context_tokens": ["word"] * n, "question_tokens": ["why", "?"], "answer_tokens": []}

        async def go() -> tuple[int, int]:
            batcher = Batcher(answer, max_batch=max_batch, max_wait_ms=1, batch_tokens=batch_tokens)
            try:
                large = asyncio.ensure_future(batcher.submit([row(f"long{i}", tokens) for i in range(rows)]))
                await asyncio.sleep(0.02)
                await batcher.submit([row("small", 3)])
                return len(order), len(await large)
            finally:
                await batcher.stop()

        before, large = asyncio.run(go())
        must(large == rows, f"the large call got {large} of {rows} answers")
        must(before <= 2, f"the small call waited for {before - 1} batches of the large one: {order}")
        return f"answered in batch {before} of {len(order)}"
    return check


def cases() -> list[Case]:
    """Load: the work of one request is bounded, and small calls are not starved by a large one."""
    g, u = "load", "issue 24: unbounded work"
    return [
        Case(g, "deca predict --context of 120,000 characters: refused before the model loads", u,
             long_context_refused(120_000, in_file=False)),
        Case(g, "deca predict --input with a 1 MB context: refused before the model loads", u,
             long_context_refused(MB, in_file=True)),
        Case(g, "deca serve: a 1 MB context (422, the model not asked)", u, server_refuses(
            lambda: json.dumps({"context": "x" * MB, "question": "q?"}).encode(), 422, "at most 20,000 characters")),
        Case(g, "deca serve: a body over the byte limit (413)", u, server_refuses(
            lambda: b"[" + b'{"context": "a", "question": "b"},' * 300_000 + b"]", 413, "are accepted")),
        Case(g, "deca serve: a small call is answered between the pieces of a large one", u,
             small_call_between(rows=12, tokens=100, max_batch=4, batch_tokens=1000)),
        Case(g, "deca serve: a small call waits for one row of a call whose rows are each over --batch-tokens",
             "issue 34: a long row starves everyone",
             small_call_between(rows=10, tokens=500, max_batch=64, batch_tokens=100)),
        Case(g, "deca serve under load: one-sentence calls answered in seconds while 64 contexts of 20,000 "
                "characters are decoded", u,
             test="tests/bench/test_faults.py::test_small_calls_are_answered_while_long_contexts_are_decoded"),
    ]
