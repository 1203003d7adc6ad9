"""The drain of `deca serve --ray` on SIGTERM: every replica drains as the local server does (infer/serve/app.py
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
import time

import ray

from infer.serve.app import drain, drained

# past the grace: the 503s of a replica's last calls are written (a call still tokenizing gets its 503 when it
# reaches the batcher, a batch in the model thread is left at the end of its turn)
MARGIN_S = 10.0
# a replica's last answer has left its handler; this long for Serve's proxy to pass it on before it is killed
SETTLE_S = 0.5


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
