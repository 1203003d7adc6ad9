"""Load (issues 24 and 34): the work of one request is bounded, and small calls are not starved by a large
one, also when each row of the large call is over the batch budget and runs alone: in the batching queue here,
and on a real `deca serve` process decoding the largest legal call (slow)."""
from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import time
from typing import Iterator

import pytest

from tests.faults.tools import case, patched, refused, server_refuses, tiny_checkpoint, write_requests

G, U = "load", "issue 24: unbounded work"
MB = 1_000_000


@contextlib.contextmanager
def model_not_loaded() -> Iterator[None]:
    """Fail the test if `deca predict` loads its model inside the block: the refusal must come first."""
    from mqan import checkpoint

    real, loaded = checkpoint.load_model, []

    def load_model(*args, **kwargs):
        loaded.append(args[0])
        return real(*args, **kwargs)

    with patched(checkpoint, "load_model", load_model):
        yield
    assert not loaded, f"the model was loaded before the refusal ({loaded[0]})" if loaded else ""


@pytest.mark.parametrize("chars, in_file", [
    case(G, "deca predict --context of 120,000 characters: refused before the model loads", U, 120_000, False),
    case(G, "deca predict --input with a 1 MB context: refused before the model loads", U, MB, True),
])
def test_a_long_context_is_refused_before_the_model_loads(tmp_path, observed, chars, in_file):
    """`deca predict` with a context of `chars` characters (--context, or a line of --input) is refused before
    its model loads, in well under a second."""
    context = "word " * (chars // 5)
    if in_file:
        path = write_requests(tmp_path, json.dumps({"context": context, "question": "what?"}).encode() + b"\n")
        asked, expect = ["--input", str(path)], f"{path}:1: context: at most 20,000 characters, got {chars:,}"
    else:
        asked, expect = ["--context", context, "--question", "what?"], \
            f"--context: at most 20,000 characters, got {chars:,}"
    model = tiny_checkpoint(tmp_path)
    start = time.perf_counter()
    with model_not_loaded():
        line = refused(["predict", "--checkpoint", str(model), "--device", "cpu", *asked], expect)
    seconds = time.perf_counter() - start
    assert seconds < 5, f"refused, but only after {seconds:.1f} s"
    observed(f"{line} ({seconds:.2f} s)")


@pytest.mark.parametrize("body, status, expect", [
    case(G, "deca serve: a 1 MB context (422, the model not asked)", U,
         json.dumps({"context": "x" * MB, "question": "q?"}).encode(), 422, "at most 20,000 characters"),
    case(G, "deca serve: a body over the byte limit (413)", U,
         b"[" + b'{"context": "a", "question": "b"},' * 300_000 + b"]", 413, "are accepted"),
])
def test_deca_serve_bounds_a_request(observed, body, status, expect):
    observed(server_refuses(body, status, expect))


@pytest.mark.parametrize("rows, tokens, max_batch, batch_tokens", [
    case(G, "deca serve: a small call is answered between the pieces of a large one", U, 12, 100, 4, 1000),
    case(G, "deca serve: a small call waits for one row of a call whose rows are each over --batch-tokens",
         "issue 34: a long row starves everyone", 10, 500, 64, 100),
])
def test_a_small_call_is_not_starved(observed, rows, tokens, max_batch, batch_tokens):
    """The batching queue of `deca serve` answers a one-sentence call sent while a call of `rows` rows of
    `tokens` tokens waits, after at most two batches (the one being run, then the small call's); the model
    takes 50 ms a batch here. bench/serve_fairness.py measures it on a real server."""
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
    assert large == rows, f"the large call got {large} of {rows} answers"
    assert before <= 2, f"the small call waited for {before - 1} batches of the large one: {order}"
    observed(f"answered in batch {before} of {len(order)}")


@pytest.mark.slow
@pytest.mark.fault("load", "deca serve under load: one-sentence calls answered in seconds while 64 contexts of "
                           "20,000 characters are decoded", "issue 24: unbounded work")
def test_small_calls_are_answered_while_long_contexts_are_decoded(tmp_path, observed):
    """One-sentence calls sent one after another while a call of 64 contexts of the most characters allowed
    (20,000) is decoded: several are answered meanwhile, the median in seconds, not after the large call
    (bench/serve_fairness.py measures 64 such contexts, with and without the batch budget)."""
    from bench.serve import free_port, start, stop
    from bench.serve_fairness import large_call, scenario

    proc, url, _ = start(["--checkpoint", str(tiny_checkpoint(tmp_path)), "--port", str(free_port()),
                          "--device", "cpu"], timeout=120)
    try:
        took = scenario(url, large_call(64, 20_000 - 10), small=20, seconds=150, alone=False)
    finally:
        stop(proc)
    busy = took["busy"]  # the calls sent while the large one was in flight (the tiny model decodes it in seconds)
    assert took["large"] is not None and len(busy) >= 1, took
    assert statistics.median(busy) < min(10.0, took["large"] / 2), took
    observed(f"{len(busy)} calls answered while the large call ran ({took['large']:.1f} s), median "
             f"{statistics.median(busy):.2f} s")
