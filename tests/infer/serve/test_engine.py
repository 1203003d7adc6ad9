"""The model loaded once and the batching queue of `deca serve` (infer/serve/engine.py)."""
from __future__ import annotations

import asyncio
import gc
import threading
import time

import pytest
import torch

from deca.errors import ConfigError, DataError
from infer.serve.engine import Batcher, Draining, Predictor
from infer.serve.examples import task_examples

from .conftest import STEPS


def requests(n: int) -> list[dict]:
    """`n` requests ({"id", "context", "question"}), the demo page's examples in turn."""
    examples = task_examples()
    return [{"id": str(i), "context": examples[i % len(examples)]["context"],
             "question": examples[i % len(examples)]["question"]} for i in range(n)]


@pytest.fixture
def rows(predictor):
    """`rows(n)`: `n` requests prepared by the predictor, as the Batcher gets them."""
    return lambda n: predictor.prepare(requests(n))


class Recording:
    """The predictor's answer function, remembering the size of every batch it ran."""

    def __init__(self, predictor: Predictor):
        self.predictor, self.sizes = predictor, []

    def __call__(self, batch: list[dict]) -> list[dict]:
        self.sizes.append(len(batch))
        return self.predictor.answer(batch)


def run(coroutine_fn):
    return asyncio.run(coroutine_fn())


def test_concurrent_calls_share_one_batch(predictor, rows):
    record = Recording(predictor)
    batch = rows(5)

    async def go():
        batcher = Batcher(record, max_batch=8, max_wait_ms=50)
        try:
            return await asyncio.gather(*(batcher.submit([r]) for r in batch[:3]), batcher.submit(batch[3:]))
        finally:
            await batcher.stop()

    answers = run(go)
    assert record.sizes == [5]  # four calls arriving together, one model batch
    assert [a for call in answers for a in call] == predictor.answer(batch)  # each call gets its own rows


def test_batches_hold_at_most_max_batch_rows(predictor, rows):
    record = Recording(predictor)
    batch = rows(5)

    async def go():
        batcher = Batcher(record, max_batch=2, max_wait_ms=50)
        try:
            return await batcher.submit(batch), batcher.stats
        finally:
            await batcher.stop()

    answers, stats = run(go)
    assert record.sizes == [2, 2, 1]
    assert (stats.batches, stats.rows, stats.largest) == (3, 5, 2)
    assert [a["id"] for a in answers] == [r["id"] for r in batch]


def test_a_batch_does_not_wait_past_max_wait(predictor, rows):
    record = Recording(predictor)
    batch = rows(2)

    async def go():
        batcher = Batcher(record, max_batch=8, max_wait_ms=10)
        try:
            first = asyncio.ensure_future(batcher.submit(batch[:1]))
            await asyncio.sleep(0.5)  # far past the 10 ms: the first batch has run alone
            return await first, await batcher.submit(batch[1:])
        finally:
            await batcher.stop()

    run(go)
    assert record.sizes == [1, 1]


def test_a_failing_batch_fails_its_callers_and_the_next_batch_runs(predictor, rows):
    calls = []

    def flaky(batch):
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("out of memory")
        return predictor.answer(batch)

    async def go():
        batcher = Batcher(flaky, max_batch=8, max_wait_ms=1)
        try:
            with pytest.raises(RuntimeError, match="out of memory"):
                await batcher.submit(rows(1))
            return await batcher.submit(rows(1))
        finally:
            await batcher.stop()

    assert run(go)[0]["id"] == "0"


def test_predictor_answers_like_deca_predict(predictor, checkpoint):
    from infer.predict import request_row
    from mqan.checkpoint import load_model
    from mqan.decode import decode

    batch = requests(3)
    model, vocab, _ = load_model(checkpoint)
    prepared = [request_row(r["context"], r["question"], r["id"]) for r in batch]
    expected = [a.to_json(r["id"]) for r, a in
                zip(batch, decode(model, vocab, prepared, 64, None, "cpu", explain=True))]
    assert predictor.prepare(batch) == prepared and predictor.answer(prepared) == expected
    assert predictor.describe() == {"checkpoint": str(checkpoint), "iteration": STEPS, "device": "cpu",
                                    "vocabulary": len(vocab), "precision": "fp32",
                                    "threads": torch.get_num_threads()}


def test_bad_settings_and_checkpoints_are_refused(tmp_path):
    with pytest.raises(ConfigError, match="--max-batch must be at least 1"):
        Batcher(print, max_batch=0, max_wait_ms=1)
    with pytest.raises(ConfigError, match="--max-wait-ms must be at least 0"):
        Batcher(print, max_batch=1, max_wait_ms=-1)
    with pytest.raises(ConfigError, match="--batch-tokens must be at least 1"):
        Batcher(print, max_batch=1, max_wait_ms=1, batch_tokens=0)
    for name, value in (("max_wait_ms", float("nan")), ("slice_ms", float("inf")), ("slice_ms", float("nan"))):
        with pytest.raises(ConfigError, match=f"--{name.replace('_', '-')} must be a finite number, got"):
            Batcher(print, **{"max_batch": 1, "max_wait_ms": 1, name: value})
    with pytest.raises(DataError, match="checkpoint not found"):
        Predictor.load(tmp_path / "missing.pt", device="cpu")


def long_row(i: int, tokens: int) -> dict:
    return {"id": f"long{i}", "context_tokens": ["word"] * tokens, "question_tokens": ["why", "?"],
            "answer_tokens": []}


def test_batches_hold_at_most_batch_tokens_and_a_longer_row_runs_alone():
    sizes = []

    def answer(batch):
        sizes.append([len(r["context_tokens"]) + len(r["question_tokens"]) for r in batch])
        return [{"id": r["id"]} for r in batch]

    async def go():
        batcher = Batcher(answer, max_batch=32, max_wait_ms=20, batch_tokens=100)
        try:
            return await batcher.submit([long_row(0, 30), long_row(1, 30), long_row(2, 30), long_row(3, 250),
                                         long_row(4, 10)])
        finally:
            await batcher.stop()

    answers = run(go)
    assert [a["id"] for a in answers] == [f"long{i}" for i in range(5)]
    assert sizes == [[32, 32, 32], [252], [12]]  # 96 tokens; the 252-token row alone; the rest


def small_beside_large(large_rows: list[dict], *, max_batch: int, batch_tokens: int, model_s: float,
                       head_start_s: float) -> tuple[list, list[list[str]], list]:
    """A one-row call submitted `head_start_s` after the first batch of a call of `large_rows` began (not after
    the call: a loaded machine may start it late), on a Batcher whose model takes `model_s` a batch: (the small
    call's answers, the batches run before it was answered, the large answers)."""
    order, began = [], threading.Event()

    def answer(batch):
        began.set()
        time.sleep(model_s)
        order.append([r["id"] for r in batch])
        return [{"id": r["id"]} for r in batch]

    async def go():
        batcher = Batcher(answer, max_batch=max_batch, max_wait_ms=1, batch_tokens=batch_tokens)
        try:
            large = asyncio.ensure_future(batcher.submit(large_rows))
            while not began.is_set():
                await asyncio.sleep(0.001)
            await asyncio.sleep(head_start_s)
            small = await batcher.submit([{**long_row(0, 3), "id": "small"}])
            return small, list(order), await large
        finally:
            await batcher.stop()

    return run(go)


def test_a_small_call_is_answered_between_the_pieces_of_a_large_one():
    # the small call arrives while the first of three pieces runs
    small, before, large = small_beside_large([long_row(i, 100) for i in range(12)], max_batch=4, batch_tokens=1000,
                                              model_s=0.05, head_start_s=0.02)
    assert small == [{"id": "small"}] and len(large) == 12
    assert len(before) <= 2  # answered with the second piece, not after all three
    assert "small" in before[1]


def test_a_small_call_waits_for_one_row_of_a_call_whose_rows_are_each_over_the_budget():
    """Rows over --batch-tokens run alone; the small call must not wait for all of them (it waited 92 s)."""
    small, before, large = small_beside_large([long_row(i, 500) for i in range(10)], max_batch=64, batch_tokens=100,
                                              model_s=0.1, head_start_s=0.01)
    assert small == [{"id": "small"}] and [a["id"] for a in large] == [f"long{i}" for i in range(10)]
    assert len(before) <= 2 and ["small"] in before  # at most the row being run, then the small call's


def test_a_small_call_does_not_ride_in_a_long_rows_batch():
    """Rows under --batch-tokens but long: the one-sentence row fits beside one by its own tokens (5 + 92 <= 100),
    not once padded to it (2 x 92 > 100), so it runs alone right after the row in flight, instead of in the next
    long row's batch (waiting for two long rows' decoding)."""
    small, before, large = small_beside_large([long_row(i, 90) for i in range(6)], max_batch=64, batch_tokens=100,
                                              model_s=0.1, head_start_s=0.01)
    assert small == [{"id": "small"}] and [a["id"] for a in large] == [f"long{i}" for i in range(6)]
    assert before == [["long0"], ["small"]]


def test_short_rows_share_a_batch_within_the_padded_budget():
    sizes = []

    def answer(batch):
        sizes.append([r["id"] for r in batch])
        return [{"id": r["id"]} for r in batch]

    async def go():
        batcher = Batcher(answer, max_batch=32, max_wait_ms=20, batch_tokens=100)
        try:
            return await batcher.submit([long_row(0, 18), long_row(1, 3), long_row(2, 3), long_row(3, 3),
                                         long_row(4, 3), long_row(5, 40)])
        finally:
            await batcher.stop()

    run(go)
    # 5 rows padded to 20 tokens = 100; the 42-token row alone (2 x 42 > 100)
    assert sizes == [["long0", "long1", "long2", "long3", "long4"], ["long5"]]


def test_a_decoding_run_in_pieces_answers_as_one_batch(predictor, rows):
    batch = rows(3)
    work, pieces = predictor.start(batch), 1
    while not work.run(0):  # one piece a turn: the encoder, then each greedy step
        pieces += 1
    assert pieces > 2 and work.answers == predictor.answer(batch)


class Steps:
    """A batch decoded in `steps` pieces of `piece_s` seconds each, logging each piece as (its first id, piece)."""

    def __init__(self, rows: list[dict], log: list, piece_s: float, steps: int):
        self.rows, self.log, self.piece_s, self.left, self.answers = rows, log, piece_s, steps, None

    def run(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while True:
            time.sleep(self.piece_s)
            self.left -= 1
            self.log.append(self.rows[0]["id"])
            if not self.left:
                self.answers = [{"id": r["id"]} for r in self.rows]
                return True
            if time.monotonic() >= deadline:
                return False


def test_a_small_call_is_answered_between_the_steps_of_a_long_row():
    """One long row decoded in 20 pieces of 10 ms, turns of 30 ms: a one-sentence call that arrives meanwhile
    is answered within a turn, not after the long row's whole decoding."""
    log: list[str] = []

    async def go():
        batcher = Batcher(None, max_batch=8, max_wait_ms=1, batch_tokens=100, slice_ms=30,
                          start=lambda rows: Steps(rows, log, 0.01, 2 if rows[0]["id"] == "small" else 20))
        try:
            large = asyncio.ensure_future(batcher.submit([long_row(0, 90)]))
            while log.count("long0") < 3:  # not a timed head start: a loaded machine may start the row late
                await asyncio.sleep(0.005)
            small = await batcher.submit([{**long_row(1, 3), "id": "small"}])
            return small, list(log), await large
        finally:
            await batcher.stop()

    small, before, large = run(go)
    assert small == [{"id": "small"}] and large == [{"id": "long0"}]
    assert before.count("small") == 2 and 3 <= before.count("long0") < 20  # the long row still had pieces left


def test_a_drain_answers_the_calls_done_in_its_grace_and_fails_the_rest_at_once():
    """A drain with 0.3 s left, with a short call (2 pieces of 10 ms) and a long one (3 rows of 100 pieces each, one row a
    batch) in flight: the short one is answered, the long one fails with Draining at the end of the grace (not
    after its 3 s of decoding), as does a call after it; no failed row is logged as an unretrieved error."""
    log: list[str] = []
    unretrieved: list[dict] = []

    async def go():
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: unretrieved.append(context))
        batcher = Batcher(None, max_batch=1, max_wait_ms=1, batch_tokens=100, slice_ms=30,
                          start=lambda rows: Steps(rows, log, 0.01, 2 if rows[0]["id"] == "small" else 100))
        try:
            large = asyncio.ensure_future(batcher.submit([long_row(i, 90) for i in range(3)]))
            await asyncio.sleep(0.05)
            small = asyncio.ensure_future(batcher.submit([{**long_row(9, 3), "id": "small"}]))
            start = time.monotonic()
            batcher.drain(5, left_s=0.3)  # 5 s of grace, 0.3 s of them left
            answered = await small
            with pytest.raises(Draining, match="did not answer within its 5 s grace"):
                await large
            failed_after = time.monotonic() - start
            with pytest.raises(Draining):
                await batcher.submit([long_row(5, 3)])
            gc.collect()
            await asyncio.sleep(0)
            return answered, failed_after
        finally:
            await batcher.stop()

    answered, failed_after = run(go)
    assert answered == [{"id": "small"}]
    assert 0.25 <= failed_after < 1.5
    assert not unretrieved, unretrieved
