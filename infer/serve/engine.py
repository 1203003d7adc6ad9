"""The model behind `deca serve`: loaded once, answering rows as `deca predict` does, and a batching queue.

`Predictor` holds one model (mqan.checkpoint.load_model); `prepare` turns requests into rows as
`deca predict` does (infer.predict.request_row); `answer` decodes them with mqan.decode, ``explain=True``
(the same JSON objects `deca predict` writes), and `start` does the same in pieces (`Decoding`): the
encoder, then each greedy step (mqan.decode.answer_steps).

`Batcher` turns the rows of concurrent HTTP calls into model batches bounded by work, not only by count:
a batch holds at most `max_batch` rows and at most `batch_tokens` tokens counted as the model computes them,
padding included: rows x the longest row's context + question tokens (a row longer than that runs alone).
Rows are taken from the waiting calls in turn, one row per call per turn, and a call has at most one
batch being decoded, so a call of 64 long contexts is decoded in budget-sized batches one after another.
The batches being decoded take turns in the model thread: a new batch first (its encoder, and its steps
for up to `slice_ms`), then each of the others for `slice_ms`. A one-sentence call that arrives while a long
row is decoded waits for the end of that row's turn (or of its encoder, which is not interrupted), not
for its whole decoding, and then runs within one turn. Counting the padding keeps a short row out of a
long row's batch, where it would cost the long row's work again. The first waiting row opens a batch,
which closes when it is full or `max_wait_ms` has passed (at once while other batches are being decoded:
its rows came during a turn); the model runs in one worker thread, so the event loop keeps accepting
requests meanwhile.

`Batcher.drain(grace_s)` is the server's shutdown (SIGTERM): calls answered within `grace_s` seconds get their
answers; at the deadline every call still waiting or being decoded fails with `Draining` (the app answers
503 with Retry-After) and so does every later one.
"""
from __future__ import annotations

import asyncio
import itertools
import math
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from deca.errors import ConfigError
from infer.limits import row_cost

SLICE_MS = 1000.0  # a turn of the model thread: how long a batch runs before the others get theirs
# (shorter turns answer small calls sooner and slow a large call more: each small call takes its turn)
BATCH_TOKENS = 4_000  # default work of one model batch: rows x the longest row's context + question tokens


class Draining(Exception):
    """The server is shutting down: the call was not answered within the drain's grace, or came after it."""


@dataclass
class Predictor:
    """A model loaded once, with what `GET /health` says about it."""

    model: object
    vocab: object
    device: object
    checkpoint: str
    iteration: int | None = None
    max_answer_length: int | None = None
    lowercase: bool = True  # the model's text preparation (infer.predict.lowercase_of)
    precision: str = "fp32"  # as mqan/precision.py resolved it for the device
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, checkpoint: str | Path, vocab_path: str | Path | None = None, device: str = "auto",
             max_answer_length: int | None = None, precision: str = "fp32") -> "Predictor":
        """Load `checkpoint` (a format-2 file needs `vocab_path`) on `device` (auto: CUDA if present), to decode
        in `precision` (fp32, bf16, int8)."""
        from infer.predict import check_answer_length, lowercase_of, pick_device
        from mqan.checkpoint import load_model
        from mqan.precision import DECODING, resolve

        dev = pick_device(device)
        check_answer_length(max_answer_length)
        chosen = resolve(precision, dev, "--precision", DECODING)
        model, vocab, extra = load_model(checkpoint, vocab_path, dev)
        return cls(model, vocab, dev, str(checkpoint), extra.get("iteration"), max_answer_length, lowercase_of(extra),
                   chosen)

    def prepare(self, requests: Sequence[dict]) -> list[dict]:
        """Requests ({"id", "context", "question"}) as rows, their text prepared as the model's training data
        was (infer.predict.request_row)."""
        from infer.predict import request_row

        return [request_row(r["context"], r["question"], r["id"], self.lowercase) for r in requests]

    def answer(self, rows: Sequence[dict]) -> list[dict]:
        """`deca predict`'s JSON object for each prepared row, in order (one model batch; thread-safe)."""
        from mqan.decode import decode

        if not rows:
            return []
        with self.lock:
            answers = decode(self.model, self.vocab, rows, len(rows), self.max_answer_length, self.device,
                             explain=True, precision=self.precision)
        return [a.to_json(r["id"]) for r, a in zip(rows, answers)]

    def start(self, rows: Sequence[dict]) -> "Decoding":
        """The decoding of `rows` as one model batch, to be run in pieces (`Decoding.run`)."""
        from mqan.decode import answer_steps, decoding

        steps = answer_steps(self.model, self.vocab, rows, self.max_answer_length, self.device, explain=True,
                             precision=self.precision)
        return Decoding(steps, lambda: decoding(self.device, self.precision), [r["id"] for r in rows], self.lock)

    def describe(self) -> dict:
        """The model part of `GET /health`."""
        import torch

        return {"checkpoint": self.checkpoint, "iteration": self.iteration, "device": str(self.device),
                "vocabulary": len(self.vocab), "precision": self.precision, "threads": torch.get_num_threads()}


class Decoding:
    """One model batch decoded in pieces: the encoder, then each greedy step (mqan.decode.answer_steps)."""

    def __init__(self, steps, context: Callable, ids: list[str], lock: threading.Lock):
        self.steps, self.context, self.ids, self.lock = steps, context, ids, lock
        self.answers: list[dict] | None = None

    def run(self, seconds: float) -> bool:
        """Run pieces until the answers are ready (True) or `seconds` have passed (False); at least one."""
        deadline = time.monotonic() + seconds
        with self.lock, self.context():
            while True:
                try:
                    next(self.steps)
                except StopIteration as done:
                    self.answers = [a.to_json(i) for i, a in zip(self.ids, done.value)]
                    return True
                if time.monotonic() >= deadline:
                    return False


class Whole:
    """A batch answered in one piece by an answer function (rows -> answers)."""

    def __init__(self, answer: Callable[[list[dict]], list[dict]], rows: list[dict]):
        self.answer, self.rows, self.answers = answer, rows, None

    def run(self, seconds: float) -> bool:
        self.answers = self.answer(self.rows)
        return True


@dataclass
class BatchStats:
    """What the batcher has done so far (shown by `GET /health`)."""

    batches: int = 0
    rows: int = 0
    largest: int = 0

    def add(self, size: int) -> None:
        self.batches += 1
        self.rows += size
        self.largest = max(self.largest, size)


def padded_cost(rows: int, longest: int) -> int:
    """The work of a model batch of `rows` rows whose longest has `longest` tokens: every row is padded to it."""
    return rows * longest


class Batcher:
    """Coalesces the rows of concurrent calls into batches of at most `max_batch` rows and `batch_tokens`
    padded tokens, taking the waiting calls' rows in turn, and runs the batches in the model thread in turns
    of about `slice_ms` each (see the module docstring)."""

    def __init__(self, answer: Callable[[list[dict]], list[dict]], max_batch: int, max_wait_ms: float,
                 batch_tokens: int = BATCH_TOKENS, start: Callable[[list[dict]], Decoding] | None = None,
                 slice_ms: float = SLICE_MS):
        for name, value, least in (("--max-batch", max_batch, 1), ("--max-wait-ms", max_wait_ms, 0),
                                   ("--batch-tokens", batch_tokens, 1), ("--slice-ms", slice_ms, 0)):
            if not math.isfinite(value):
                raise ConfigError(f"{name} must be a finite number, got {value}")
            if value < least:
                raise ConfigError(f"{name} must be at least {least}, got {value}")
        self.answer, self.max_batch, self.max_wait = answer, max_batch, max_wait_ms / 1000.0
        self.batch_tokens, self.slice = batch_tokens, slice_ms / 1000.0
        self.begin = start or (lambda rows: Whole(answer, rows))
        self.stats = BatchStats()
        self._calls: dict[int, list[tuple[dict, asyncio.Future]]] = {}  # call -> its waiting rows, in order
        self._opener = -1  # the call whose row opened the last batch: the next batch starts after it
        self._opened: float | None = None  # when the oldest waiting row arrived
        self._ids = itertools.count()
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._running: deque[tuple[list, Decoding | Whole]] = deque()  # the batches being decoded, in turn
        self._turn: list = []  # the batch in the model thread now
        self._deadline: asyncio.TimerHandle | None = None  # the drain's end
        self._closed: Draining | None = None  # set at the drain's deadline: every call fails with it
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deca-model")

    async def submit(self, rows: Sequence[dict]) -> list[dict]:
        """The answers of `rows` (one call), in order, once the batches holding them have run."""
        if self._closed is not None:
            raise self._closed
        if self._task is None:
            self.start()
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in rows]
        if not self._calls:
            self._opened = time.monotonic()
        self._calls[next(self._ids)] = list(zip(rows, futures))
        self._wake.set()
        return list(await asyncio.gather(*futures))

    def drain(self, grace_s: float, left_s: float | None = None) -> None:
        """Fail every call not answered `left_s` (default: `grace_s`) seconds from now with `Draining`, and every
        later call; the error names the grace, `grace_s`."""
        if self._deadline is None:
            left_s = grace_s if left_s is None else left_s
            self._deadline = asyncio.get_running_loop().call_later(left_s, self._close, grace_s)

    def _close(self, grace_s: float) -> None:
        self._closed = Draining(f"the server is shutting down and did not answer within its {grace_s:g} s grace")
        waiting = [f for _, f in itertools.chain.from_iterable(self._calls.values())]
        decoding = [f for items, _ in self._running for _, _, f in items] + [f for _, _, f in self._turn]
        self._calls.clear()
        self._running.clear()  # the batch in the model thread, if any, is dropped when its turn ends
        for future in waiting + decoding:
            fail(future, self._closed)

    def start(self) -> None:
        """Start the batching loop on the running event loop (`submit` starts it when needed)."""
        self._calls, self._wake = {}, asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="deca-batcher")

    async def stop(self) -> None:
        """Stop the loop and the model thread (calls still waiting get a CancelledError)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
            for _, future in itertools.chain.from_iterable(self._calls.values()):
                future.cancel()
        self._pool.shutdown(wait=True)

    def _waiting(self) -> tuple[int, int]:
        """(rows, tokens) waiting."""
        rows = list(itertools.chain.from_iterable(self._calls.values()))
        return len(rows), sum(row_cost(row) for row, _ in rows)

    def _full(self) -> bool:
        rows, tokens = self._waiting()
        return rows >= self.max_batch or tokens >= self.batch_tokens

    def _take(self, busy: set[int] = frozenset()) -> list[tuple[int, dict, asyncio.Future]]:
        """One batch, as (call, row, future): a row from each waiting call in turn until `max_batch` rows or
        `batch_tokens` padded tokens (a call whose next row does not fit any more sits out the rest of this
        batch); calls in `busy` (a batch of theirs is being decoded) sit it out whole. Batches are opened by the
        waiting calls in turn, round robin in order of arrival: when one call's rows are each over the budget
        (each runs alone), a later call's row opens the next batch instead of waiting for all of them."""
        batch, longest, out = [], 0, set(busy)
        later = [c for c in self._calls if c > self._opener and c not in out]  # calls are numbered by arrival
        turn = later + [c for c in self._calls if c <= self._opener and c not in out]
        self._opener = turn[0] if turn else self._opener
        while len(batch) < self.max_batch and set(self._calls) - out:
            for call in [c for c in turn if c in self._calls and c not in out]:
                row, future = self._calls[call][0]
                if batch and padded_cost(len(batch) + 1, max(longest, row_cost(row))) > self.batch_tokens:
                    out.add(call)
                    continue
                self._calls[call].pop(0)
                if not self._calls[call]:
                    del self._calls[call]
                if not future.done():  # a caller may have gone
                    batch.append((call, row, future))
                    longest = max(longest, row_cost(row))
                if len(batch) >= self.max_batch:
                    break
        return batch

    async def _next_batch(self, busy: set[int]) -> list[tuple[int, dict, asyncio.Future]]:
        """With nothing being decoded (`busy` empty), wait for a first row, then for more until a batch is full or
        the oldest row waited max_wait; else take at once what waits (the rows came during the last turn)."""
        if busy:
            return self._take(busy)
        while not self._calls:
            self._wake.clear()
            await self._wake.wait()
        deadline = (self._opened or time.monotonic()) + self.max_wait
        while not self._full() and (left := deadline - time.monotonic()) > 0:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                break
        batch = self._take()
        self._opened = time.monotonic() if self._calls else None
        return batch

    async def _loop(self) -> None:
        """Batches in the model thread, in turns: a new batch runs first (its encoder and as many steps as fit
        in a turn), then the batches being decoded take turns of `slice` seconds, oldest first."""
        loop = asyncio.get_running_loop()
        running = self._running
        while True:
            if self._calls or not running:
                items = await self._next_batch({call for batch, _ in running for call, _, _ in batch})
                if items:
                    self.stats.add(len(items))
                    running.appendleft((items, self.begin([row for _, row, _ in items])))
            if not running:
                continue
            items, work = running.popleft()
            self._turn = items
            try:
                finished = await loop.run_in_executor(self._pool, work.run, self.slice)
            except Exception as exc:  # noqa: BLE001 - every caller of this batch gets the error
                for _, _, future in items:
                    fail(future, exc)
                continue
            finally:
                self._turn = []
            if not finished:
                if not all(future.done() for _, _, future in items):  # else its callers are gone (the drain)
                    running.append((items, work))
                continue
            for (_, _, future), answer in zip(items, work.answers):
                if not future.done():
                    future.set_result(answer)


def fail(future: asyncio.Future, exc: BaseException) -> None:
    """Fail `future` with `exc` unless it is done (its caller may have gone)."""
    if not future.done():
        future.set_exception(exc)
