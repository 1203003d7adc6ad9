"""The HTTP app of `deca serve` (FastAPI), the same for uvicorn alone and for Ray Serve.

Routes:
  POST /predict   one request {"context", "question"[, "id"]} or a JSON array of them -> what `deca predict`
                  writes for each ({"id", "answer", "tokens": [{"token", "source", "weights", "probability"}]}),
                  one object for one request, an array for an array; the header X-Elapsed-Ms says how long the
                  call took on the server (waiting for its batch included); X-Model names the registered
                  model version that answered (models:/NAME/VERSION), when served from the registry
  GET  /health    {"status": "ok", the checkpoint, device, batching counts, limits, the number of POST
                  /predict calls in flight}; {"status": "draining", ...} with status 503 during a drain
  GET  /tasks     {"tasks": [{"task", "description", "group", "context", "question", "expected"}]}
  GET  /          the demo page (static/index.html, with static/app.js and static/style.css)

The app answers through a backend: `LocalBackend` (a Predictor and an asyncio Batcher, in one process,
which `swap` replaces by another between calls: `deca serve --follow`, infer/serve/follow.py) here, or the
Ray Serve deployment of infer/serve/ray_app.py. Refused calls get a 4xx status and
{"error": "<one line>", "errors": [{"field", "message"}]} (infer/serve/schema.py).

Shutting down (SIGTERM) is a drain (`drain`): new calls get 503 with Retry-After (uvicorn also stops
listening), the calls in flight are answered if they finish within the grace, and the rest get 503 with
Retry-After at its end (engine.Batcher.drain), each with the same one-line JSON error.
"""
from __future__ import annotations

import asyncio
import signal
import socket
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException

from infer.serve.engine import BATCH_TOKENS, SLICE_MS, Batcher, Draining, Predictor
from infer.serve.examples import task_examples
from infer.serve.schema import Limits, RequestError, parse_body, request_adapters

STATIC = Path(__file__).resolve().parent / "static"
GRACE_S = 30.0  # seconds the calls in flight get to finish after SIGTERM
RETRY_AFTER_S = 5  # what a call refused by the drain is told: another instance, or this one restarted
# uvicorn's own limit is later than the drain's: at the grace's end every call gets its 503 at once, except one
# still tokenizing, which gets it when it reaches the batcher; uvicorn would cancel calls without an answer
UVICORN_MARGIN_S = 10.0


class Backend(Protocol):
    """What the app needs from the model side."""

    async def answer(self, requests: list[dict]) -> list[dict]:
        """`deca predict`'s JSON object for each request ({"id", "context", "question"}), in order."""

    def health(self) -> dict:
        """What `GET /health` adds about the model and the batching."""

    # optional: async open() at the app's start, drain(grace_s, left_s) to fail the calls not answered within
    # left_s (`drain`), async close() at its end


@dataclass
class Generation:
    """One model being served: its Predictor, its own Batcher (and model thread), the registry version it is
    (None when not from the registry) and the calls it is answering now."""

    predictor: Predictor
    batcher: Batcher
    version: str | None = None
    calls: int = 0


class LocalBackend:
    """One Predictor in this process, behind a Batcher that coalesces concurrent calls. `swap` puts another model
    in its place between calls: a call is answered wholly by the model current when it arrived; the old model's
    batcher is stopped once its last call is answered."""

    def __init__(self, predictor: Predictor, max_batch: int = 32, max_wait_ms: float = 5.0,
                 batch_tokens: int = BATCH_TOKENS, slice_ms: float = SLICE_MS, version: str | None = None,
                 model_name: str | None = None):
        self.batching = (max_batch, max_wait_ms, batch_tokens, slice_ms)
        self.model_name = model_name
        self.current = self.generation(predictor, version)
        self.retiring: list[Generation] = []  # swapped out, still answering calls
        self.swaps = 0
        self.on_open: list = []  # callables run at the app's start with the event loop (the alias follower)
        self.on_close: list = []

    def generation(self, predictor: Predictor, version: str | None) -> Generation:
        max_batch, max_wait_ms, batch_tokens, slice_ms = self.batching
        return Generation(predictor, Batcher(predictor.answer, max_batch, max_wait_ms, batch_tokens, predictor.start,
                                             slice_ms), version)

    @property
    def predictor(self) -> Predictor:
        return self.current.predictor

    @property
    def batcher(self) -> Batcher:
        return self.current.batcher

    def label(self, version: str | None) -> str | None:
        """How a response names the model version that answered it (header X-Model)."""
        return f"models:/{self.model_name}/{version}" if self.model_name and version else None

    async def answer(self, requests: list[dict]) -> list[dict]:
        return (await self.answer_from(requests))[0]

    async def answer_from(self, requests: list[dict]) -> tuple[list[dict], str | None]:
        """(the answers, the label of the model that gave them): the model current when the call came."""
        gen = self.current
        gen.calls += 1
        try:
            rows = await asyncio.to_thread(gen.predictor.prepare, requests)  # tokenizing off the event loop
            return await gen.batcher.submit(rows), self.label(gen.version)
        finally:
            gen.calls -= 1
            if gen in self.retiring and not gen.calls:
                await self.retire(gen)

    def swap(self, predictor: Predictor, version: str | None) -> None:
        """Serve `predictor` (fully loaded) from the next call on; run on the event loop, between calls."""
        old, self.current = self.current, self.generation(predictor, version)
        self.swaps += 1
        self.retiring.append(old)
        if not old.calls:
            asyncio.get_running_loop().create_task(self.retire(old))

    async def retire(self, gen: Generation) -> None:
        if gen in self.retiring:
            self.retiring.remove(gen)
            await gen.batcher.stop()

    def health(self) -> dict:
        batcher, stats = self.batcher, self.batcher.stats
        return {**self.predictor.describe(), "serving": "uvicorn", "model": self.label(self.current.version),
                "swaps": self.swaps,
                "batching": {"max_batch": batcher.max_batch, "max_wait_ms": batcher.max_wait * 1000,
                             "batch_tokens": batcher.batch_tokens, "slice_ms": batcher.slice * 1000,
                             "batches": stats.batches, "rows": stats.rows, "largest_batch": stats.largest}}

    async def open(self) -> None:
        for start in self.on_open:
            start(asyncio.get_running_loop())

    def drain(self, grace_s: float, left_s: float | None = None) -> None:
        for gen in [self.current, *self.retiring]:
            gen.batcher.drain(grace_s, left_s)

    async def close(self) -> None:
        for stop in self.on_close:
            stop()
        for gen in [self.current, *self.retiring]:
            await gen.batcher.stop()


def create_app(backend: Backend, limits: Limits = Limits()) -> FastAPI:
    """The FastAPI app answering through `backend` (see the module docstring for the routes)."""
    adapters = request_adapters(limits)
    examples = task_examples()

    @asynccontextmanager
    async def lifespan(_app: FastAPI):
        opening = getattr(backend, "open", None)
        if opening is not None:
            await opening()
        yield
        close = getattr(backend, "close", None)
        if close is not None:
            await close()

    app = FastAPI(title="decaNLP MQAN", description="Ask a trained MQAN model; every answer token says which "
                  "source gave it (vocabulary, context or question).", lifespan=lifespan)

    add_error_handlers(app)

    @app.get("/health")
    async def health() -> JSONResponse:
        body = {"status": "draining" if app.state.draining else "ok", **backend.health(), "limits": limits.describe(),
                "calls_in_flight": app.state.in_flight}
        return JSONResponse(body, status_code=503 if app.state.draining else 200)  # a load balancer looks elsewhere

    @app.get("/tasks")
    async def tasks() -> dict:
        return {"tasks": examples}

    @app.post("/predict")
    async def predict(request: Request) -> JSONResponse:
        start = time.perf_counter()
        if app.state.draining:
            raise Draining("the server is shutting down and takes no new calls")
        app.state.in_flight += 1
        try:
            raw = await read_body(request, limits.max_body_bytes)
            items, single = parse_body(raw, adapters, limits)
            answer_from = getattr(backend, "answer_from", None)
            answers, model = await answer_from(items) if answer_from else (await backend.answer(items), None)
        finally:
            app.state.in_flight -= 1
        elapsed = (time.perf_counter() - start) * 1000
        headers = {"X-Elapsed-Ms": f"{elapsed:.1f}", **({"X-Model": model} if model else {})}
        return JSONResponse(answers[0] if single else answers, headers=headers)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.state.backend, app.state.draining, app.state.in_flight = backend, False, 0
    return app


def add_error_handlers(app: FastAPI) -> None:
    """Every refusal as {"error": "<one line>", "errors": [...]}: bad requests (4xx), the drain (503 with
    Retry-After) and Starlette's own (404, 405)."""
    @app.exception_handler(RequestError)
    async def refused(_request: Request, exc: RequestError) -> JSONResponse:
        return JSONResponse(exc.body(), status_code=exc.status)

    @app.exception_handler(Draining)
    async def draining(_request: Request, exc: Draining) -> JSONResponse:
        return JSONResponse({"error": f"{exc}; retry in {RETRY_AFTER_S} s", "errors": []}, status_code=503,
                            headers={"Retry-After": str(RETRY_AFTER_S)})

    @app.exception_handler(HTTPException)
    async def http_error(_request: Request, exc: HTTPException) -> JSONResponse:
        return JSONResponse({"error": str(exc.detail), "errors": []}, status_code=exc.status_code,
                            headers=getattr(exc, "headers", None))


def drain(app: FastAPI, grace_s: float, left_s: float | None = None) -> None:
    """Start the drain (see the module docstring): new calls refused, those in flight failed after `left_s`
    seconds (default: `grace_s`, the whole grace)."""
    app.state.draining = True
    backend_drain = getattr(app.state.backend, "drain", None)
    if backend_drain is not None:
        backend_drain(grace_s, left_s)


async def drained(app: FastAPI, timeout_s: float) -> bool:
    """Whether the calls in flight have all been answered within `timeout_s` seconds (checked every 50 ms)."""
    deadline = time.monotonic() + timeout_s
    while app.state.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not app.state.in_flight



async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused (413) as soon as it passes `limit` bytes, whatever Content-Length says."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise RequestError(413, f"the body has {int(declared):,} bytes; at most {limit:,} are accepted "
                                "(fewer or shorter requests per call)")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise RequestError(413, f"the body has more than {limit:,} bytes, the most accepted "
                                    "(fewer or shorter requests per call)")
        chunks.append(chunk)
    return b"".join(chunks)


def bind(host: str, port: int) -> socket.socket:
    """A listening-ready socket on host:port (port 0: any free port), so the URL is known before serving."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(exc.errno, f"cannot listen on {host}:{port}: {exc.strerror} (another server there? "
                                 "pick another --port, or 0 for any free one)") from None
    return sock


def serve_local(app: FastAPI, sock: socket.socket, log_level: str = "info", grace_s: float = GRACE_S) -> None:
    """Serve `app` with uvicorn on the bound socket until Ctrl-C / SIGTERM, then drain for `grace_s` seconds
    (`drain`). After SIGTERM the process ends with exit status 0: uvicorn re-raises the signal it caught once
    it has shut down, which here reaches a handler that does nothing instead of the default one that kills the
    process (status 143)."""
    import uvicorn

    class DrainingServer(uvicorn.Server):
        async def shutdown(self, sockets=None) -> None:
            drain(app, grace_s)  # before uvicorn stops listening and waits for the calls in flight
            await super().shutdown(sockets=sockets)

    config = uvicorn.Config(app, log_level=log_level, access_log=log_level == "debug",
                            timeout_graceful_shutdown=grace_s + UVICORN_MARGIN_S)
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        DrainingServer(config).run(sockets=[sock])
    finally:
        signal.signal(signal.SIGTERM, previous)
