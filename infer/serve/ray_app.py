"""`deca serve --ray --replicas N`: the same FastAPI app (infer/serve/app.py) as a Ray Serve deployment.

Each replica loads the model once (a Predictor) and builds the app around itself
(``__serve_build_asgi_app__``), answering through the same Batcher as the local server (infer/serve/
engine.py): the rows of the calls a replica receives go into batches bounded by `max_batch` rows and
`batch_tokens` tokens, the waiting calls taken in turn; Ray's proxy spreads calls over the replicas. `start_ray` starts a local Ray instance (or joins the one
in RAY_ADDRESS) and Serve's HTTP proxy on host:port; `drain_ray` drains the replicas (SIGTERM, below);
`stop_ray` shuts Serve and Ray down.

On SIGTERM (`drain_ray`), every replica drains as the local server does (infer/serve/app.py
`drain`), and Serve is shut down only once they have all answered their calls in flight.

Serve's own shutdown does not drain from outside: `serve.shutdown()` kills the HTTP proxy at once (its
`shutdown` does nothing before the kill), dropping every call in flight, and a replica being stopped is not
told so; it only waits for its calls to end, until `graceful_shutdown_timeout_s`. So the driver tells the
replicas itself, through a `DrainSignal` actor that every replica awaits from its start (`watch`): once the
driver has set it (`drain_replicas`), each replica refuses new calls with 503, fails those still unanswered
at the end of the grace (counted from the signal, in the driver's wall-clock time) with 503, and reports when
it has no call left; then the driver shuts Serve down (`serve.shutdown`; not `serve.delete` first, whose
proxy answers 404 in plain text meanwhile), and Serve's graceful shutdown finds the replicas idle.
"""
from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass

import ray
from ray import serve

from deca.processes import guard_self
from infer.serve.app import GRACE_S, LocalBackend, create_app, drain, drained
from infer.serve.engine import BATCH_TOKENS, SLICE_MS, Predictor
from infer.serve.schema import Limits

APP_NAME = "deca"
# past the grace: the 503s of a replica's last calls are written (a call still tokenizing gets its 503 when it
# reaches the batcher, a batch in the model thread is left at the end of its turn)
MARGIN_S = 10.0
# a replica's last answer has left its handler; this long for Serve's proxy to pass it on before it is killed
SETTLE_S = 0.5


@dataclass(frozen=True)
class ServeConfig:
    """What every replica needs to load the model and build the app."""

    checkpoint: str
    vocab_path: str | None = None
    device: str = "auto"
    max_batch: int = 32
    max_wait_ms: float = 5.0
    max_answer_length: int | None = None
    limits: Limits = Limits()
    batch_tokens: int = BATCH_TOKENS
    precision: str = "fp32"
    slice_ms: float = SLICE_MS
    grace_s: float = GRACE_S


_SIGNAL: list = []  # the DrainSignal of the deployment this process started
@serve.deployment(name="DecaServe", max_ongoing_requests=256)
@serve.ingress()
class DecaServe:
    """One replica: the model, a Batcher and the app."""

    def __init__(self, config: ServeConfig, signal=None):
        self.config, self.signal, self.watching = config, signal, None
        self.predictor = Predictor.load(config.checkpoint, config.vocab_path, config.device, config.max_answer_length,
                                        config.precision)
        self.backend = LocalBackend(self.predictor, config.max_batch, config.max_wait_ms, config.batch_tokens,
                                   config.slice_ms)

    async def answer(self, requests: list[dict]) -> list[dict]:
        """The requests of one call, answered in batches of this replica."""
        return await self.backend.answer(requests)

    async def open(self) -> None:
        """The app has started: wait for the driver's drain (`watch`)."""
        if self.signal is not None:
            replica = serve.get_replica_context().replica_tag
            self.watching = asyncio.create_task(watch(self.signal, self.http_app, self.config.grace_s, replica))

    def drain(self, grace_s: float, left_s: float | None = None) -> None:
        self.backend.drain(grace_s, left_s)

    def health(self) -> dict:
        return {**self.backend.health(), "serving": "ray", "replica": serve.get_replica_context().replica_tag,
                "pid": os.getpid()}

    def __serve_build_asgi_app__(self):
        self.http_app = create_app(self, self.config.limits)  # not `app`: a property of @serve.ingress
        return self.http_app


def start_ray(config: ServeConfig, replicas: int, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Deploy `replicas` replicas behind Serve's proxy on host:port; returns the URL once all are running."""
    import torch

    cuda = config.device.startswith("cuda") or (config.device == "auto" and torch.cuda.is_available())
    if not ray.is_initialized():
        address = os.environ.get("RAY_ADDRESS")
        if not address:
            guard_local_processes()
        ray.init(address=address, include_dashboard=False, log_to_driver=False,
                 **({} if address else {"num_cpus": max(os.cpu_count() or 1, replicas)}))
    serve.start(http_options={"host": host, "port": port})
    options = {"num_cpus": 1, **({"num_gpus": 1.0 / replicas} if cuda else {})}
    _SIGNAL[:] = [DrainSignal.remote()]
    # Serve's own stop of a replica waits for its calls at least as long as our drain does
    app = DecaServe.options(num_replicas=replicas, ray_actor_options=options,
                            graceful_shutdown_timeout_s=config.grace_s + 2 * MARGIN_S,
                            graceful_shutdown_wait_loop_s=0.1).bind(config, _SIGNAL[0])
    serve.run(app, name=APP_NAME, route_prefix="/", blocking=False)
    return f"http://{host}:{port}"


def replica_states() -> dict[str, int]:
    """{state: number of replicas} of the deployment, e.g. {"RUNNING": 2}."""
    status = serve.status().applications[APP_NAME].deployments["DecaServe"]
    return dict(status.replica_states)


def drain_ray(replicas: int, grace_s: float) -> bool:
    """Drain the replicas (`drain_replicas`); whether each had answered its calls in time."""
    return drain_replicas(_SIGNAL[0], replicas, grace_s) if _SIGNAL else True


def stop_ray() -> None:
    """Shut Serve and the Ray instance down."""
    try:
        serve.shutdown()
    finally:
        ray.shutdown()


@ray.remote(num_cpus=0)
class DrainSignal:
    """Set once by the driver; the replicas wait for it and report back when they have drained."""

    def __init__(self):
        self._set = asyncio.Event()
        self._deadline = 0.0
        self._idle: set[str] = set()

    async def wait(self) -> float:
        """The drain's deadline (time.time()), once it has started."""
        await self._set.wait()
        return self._deadline

    async def set(self, deadline: float) -> None:
        self._deadline = deadline
        self._set.set()

    async def idle(self, replica: str) -> None:
        self._idle.add(replica)

    async def idle_replicas(self) -> int:
        return len(self._idle)


async def watch(signal, app, grace_s: float, replica: str) -> None:
    """In a replica, for its life: once the drain starts, drain `app` and report when its calls are answered."""
    try:
        deadline = await signal.wait.remote()
    except ray.exceptions.RayError:  # the driver went away without a drain: nothing to report to
        return
    left_s = min(grace_s, max(0.0, deadline - time.time()))
    drain(app, grace_s, left_s)
    await drained(app, left_s + MARGIN_S)
    await signal.idle.remote(replica)


def drain_replicas(signal, replicas: int, grace_s: float) -> bool:
    """In the driver: start the drain and wait until `replicas` replicas have answered all their calls (True),
    or until the grace and a margin have passed (False)."""
    ray.get(signal.set.remote(time.time() + grace_s))
    deadline = time.monotonic() + grace_s + MARGIN_S
    while time.monotonic() < deadline:
        if ray.get(signal.idle_replicas.remote()) >= replicas:
            time.sleep(SETTLE_S)
            return True
        time.sleep(0.1)
    return False


_GUARDS: list = []  # held for the life of the process: a watchdog whose pipe closes ends what it guards


def guard_local_processes() -> None:
    """A local Ray's processes die with `deca serve --ray`, SIGKILL included (deca/processes.py)."""
    if not _GUARDS:
        _GUARDS.append(guard_self())
        if os.getsid(0) == os.getpid():  # a session of its own (a service, a test daemon): end all of it too
            _GUARDS[0].watch(os.getpid())
