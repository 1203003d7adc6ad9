"""The model behind `deca serve`: loaded once, answering rows as `deca predict` does, and a batching queue.

`Predictor` holds one model (train.mqan.checkpoint.load_model) and answers processed request rows
(train.infer.predict.request_row) with train.mqan.decode.decode, ``explain=True``: the same JSON objects
`deca predict` writes. `Batcher` coalesces the rows of concurrent HTTP calls into one model batch: the
first waiting row opens a batch, which closes when it holds `max_batch` rows or `max_wait_ms` has
passed; the model runs in one worker thread, so the event loop keeps accepting requests meanwhile.
"""
from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from deca.errors import ConfigError


@dataclass
class Predictor:
    """A model loaded once, with what `GET /health` says about it."""

    model: object
    vocab: object
    device: object
    checkpoint: str
    iteration: int | None = None
    max_answer_length: int | None = None
    lowercase: bool = True  # the model's text preparation (train.infer.predict.lowercase_of)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @classmethod
    def load(cls, checkpoint: str | Path, vocab_path: str | Path | None = None, device: str = "auto",
             max_answer_length: int | None = None) -> "Predictor":
        """Load `checkpoint` (a format-2 file needs `vocab_path`) on `device` (auto: CUDA if present)."""
        import torch

        from train.infer.predict import lowercase_of, pick_device
        from train.mqan.checkpoint import load_model

        dev = pick_device(device)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"--device {device}: CUDA is not available here; use --device cpu (or auto)")
        model, vocab, extra = load_model(checkpoint, vocab_path, dev)
        return cls(model, vocab, dev, str(checkpoint), extra.get("iteration"), max_answer_length, lowercase_of(extra))

    def answer(self, requests: Sequence[dict]) -> list[dict]:
        """`deca predict`'s JSON object for each request ({"id", "context", "question"}), in order (one model
        batch; thread-safe). The text is prepared as the model's training data was (request_row)."""
        from train.infer.predict import request_row
        from train.mqan.decode import decode

        if not requests:
            return []
        rows = [request_row(r["context"], r["question"], r["id"], self.lowercase) for r in requests]
        with self.lock:
            answers = decode(self.model, self.vocab, rows, len(rows), self.max_answer_length, self.device,
                             explain=True)
        return [a.to_json(r["id"]) for r, a in zip(rows, answers)]

    def describe(self) -> dict:
        """The model part of `GET /health`."""
        return {"checkpoint": self.checkpoint, "iteration": self.iteration, "device": str(self.device),
                "vocabulary": len(self.vocab)}


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


class Batcher:
    """Coalesces rows submitted by concurrent calls into batches of at most `max_batch` rows."""

    def __init__(self, answer: Callable[[list[dict]], list[dict]], max_batch: int, max_wait_ms: float):
        if max_batch < 1:
            raise ConfigError(f"--max-batch must be at least 1, got {max_batch}")
        if max_wait_ms < 0:
            raise ConfigError(f"--max-wait-ms must be 0 or more, got {max_wait_ms}")
        self.answer, self.max_batch, self.max_wait = answer, max_batch, max_wait_ms / 1000.0
        self.stats = BatchStats()
        self._pending: list[tuple[dict, asyncio.Future, float]] = []
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="deca-model")

    async def submit(self, rows: Sequence[dict]) -> list[dict]:
        """The answers of `rows`, in order, once the batches holding them have run."""
        if self._task is None:
            self.start()
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in rows]
        now = time.monotonic()
        self._pending.extend((row, future, now) for row, future in zip(rows, futures))
        self._wake.set()
        return list(await asyncio.gather(*futures))

    def start(self) -> None:
        """Start the batching loop on the running event loop (`submit` starts it when needed)."""
        self._pending, self._wake = [], asyncio.Event()
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
            for _, future, _ in self._pending:
                future.cancel()
        self._pool.shutdown(wait=True)

    async def _next_batch(self) -> list[tuple[dict, asyncio.Future]]:
        """Wait for a first row, then for more until the batch is full or the oldest row waited max_wait."""
        while not self._pending:
            self._wake.clear()
            await self._wake.wait()
        deadline = self._pending[0][2] + self.max_wait
        while len(self._pending) < self.max_batch and (left := deadline - time.monotonic()) > 0:
            self._wake.clear()
            try:
                await asyncio.wait_for(self._wake.wait(), left)
            except asyncio.TimeoutError:
                break
        batch, self._pending = self._pending[:self.max_batch], self._pending[self.max_batch:]
        return [(row, future) for row, future, _ in batch if not future.done()]  # a caller may have gone

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            items = await self._next_batch()
            if not items:
                continue
            self.stats.add(len(items))
            try:
                answers = await loop.run_in_executor(self._pool, self.answer, [row for row, _ in items])
            except Exception as exc:  # noqa: BLE001 - every caller of this batch gets the error
                for _, future in items:
                    if not future.done():
                        future.set_exception(exc)
                continue
            for (_, future), answer in zip(items, answers):
                if not future.done():
                    future.set_result(answer)
