"""`deca serve --ray --replicas N`: the same FastAPI app (infer/serve/app.py) as a Ray Serve deployment.

Each replica loads the model once (a Predictor) and builds the app around itself
(``__serve_build_asgi_app__``), answering through the same Batcher as the local server (infer/serve/
engine.py): the rows of the calls a replica receives go into batches bounded by `max_batch` rows and
`batch_tokens` tokens, the waiting calls taken in turn; Ray's proxy spreads calls over the replicas. `start_ray` starts a local Ray instance (or joins the one
in RAY_ADDRESS) and Serve's HTTP proxy on host:port; `drain_ray` drains the replicas (SIGTERM,
infer/serve/ray_drain.py); `stop_ray` shuts Serve and Ray down.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass

from ray import serve

from infer.serve.app import GRACE_S, LocalBackend, create_app
from infer.serve.engine import BATCH_TOKENS, SLICE_MS, Predictor
from infer.serve.ray_drain import MARGIN_S, DrainSignal, drain_replicas, watch
from infer.serve.schema import Limits

APP_NAME = "deca"


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
        """The app has started: wait for the driver's drain (infer/serve/ray_drain.py)."""
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
    import ray
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
    """Drain the replicas (infer/serve/ray_drain.py); whether each had answered its calls in time."""
    return drain_replicas(_SIGNAL[0], replicas, grace_s) if _SIGNAL else True


def stop_ray() -> None:
    """Shut Serve and the Ray instance down."""
    import ray

    try:
        serve.shutdown()
    finally:
        ray.shutdown()


_GUARDS: list = []  # held for the life of the process: a watchdog whose pipe closes ends what it guards


def guard_local_processes() -> None:
    """A local Ray's processes die with `deca serve --ray`, SIGKILL included (deca/processes.py)."""
    from deca.processes import guard_self

    if not _GUARDS:
        _GUARDS.append(guard_self())
        if os.getsid(0) == os.getpid():  # a session of its own (a service, a test daemon): end all of it too
            _GUARDS[0].watch(os.getpid())
