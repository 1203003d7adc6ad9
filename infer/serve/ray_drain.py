"""The drain of `deca serve --ray` on SIGTERM: every replica drains as the local server does (infer/serve/app.py
`drain`), and Serve is shut down only once they have all answered their calls in flight.

Serve's own shutdown does not drain from outside: `serve.shutdown()` kills the HTTP proxy at once (its
`shutdown` does nothing before the kill), dropping every call in flight, and a replica being stopped is not
told so; it only waits for its calls to end, until `graceful_shutdown_timeout_s`. So the driver tells the
replicas itself, through a `DrainSignal` actor that every replica awaits from its start (`watch`): once the
driver has set it (`drain_replicas`), each replica refuses new calls with 503, fails those still unanswered
after the grace with 503, and reports when it has no call left; then the driver shuts Serve down, and
Serve's graceful shutdown finds the replicas idle.
"""
from __future__ import annotations

import asyncio
import time

import ray

from infer.serve.app import drain, drained

# past the grace: the 503s of a replica's last calls are written (a call still tokenizing gets its 503 when it
# reaches the batcher, a batch in the model thread is left at the end of its turn)
MARGIN_S = 10.0


@ray.remote(num_cpus=0)
class DrainSignal:
    """Set once by the driver; the replicas wait for it and report back when they have drained."""

    def __init__(self):
        self._set = asyncio.Event()
        self._idle: set[str] = set()

    async def wait(self) -> None:
        await self._set.wait()

    async def set(self) -> None:
        self._set.set()

    async def idle(self, replica: str) -> None:
        self._idle.add(replica)

    async def idle_replicas(self) -> int:
        return len(self._idle)


async def watch(signal, app, grace_s: float, replica: str) -> None:
    """In a replica, for its life: once the drain starts, drain `app` and report when its calls are answered."""
    try:
        await signal.wait.remote()
    except ray.exceptions.RayError:  # the driver went away without a drain: nothing to report to
        return
    drain(app, grace_s)
    await drained(app, grace_s + MARGIN_S)
    await signal.idle.remote(replica)


def drain_replicas(signal, replicas: int, grace_s: float) -> bool:
    """In the driver: start the drain and wait until `replicas` replicas have answered all their calls (True),
    or until the grace and a margin have passed (False)."""
    ray.get(signal.set.remote())
    deadline = time.monotonic() + grace_s + MARGIN_S
    while time.monotonic() < deadline:
        if ray.get(signal.idle_replicas.remote()) >= replicas:
            return True
        time.sleep(0.1)
    return False
