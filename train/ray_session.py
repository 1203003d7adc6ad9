"""The driver process's side of Ray: Ray started quietly for this process (or the RAY_ADDRESS cluster
joined), the local Ray's processes tied to this process so that they die with it, the cluster's room for the
run checked, the actor that carries rank 0's progress messages to the driver, and Ray Train's `fit` run in a
helper thread so that Ctrl-C reaches the driver (in local mode too, where no Ray is started: there Ctrl-C
ends the training at its next step).

train/driver.py's run_trainer calls these; the run itself (the checks, the MLflow run, the TorchTrainer) is
the driver's.
"""
from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, Callable

from deca.config import Params
from deca.processes import guard_self
from train.workers import check_room

QUIET_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
             "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0", "PYTHONHASHSEED": "0"}


def start_ray(params: Params) -> bool:
    """Initialize Ray unless it already is; returns whether this call started it."""
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    import ray

    if ray.is_initialized():
        return False
    kwargs = dict(log_to_driver=False, logging_level=logging.WARNING)
    address = os.environ.get("RAY_ADDRESS")
    if address:
        ray.init(address=address, **kwargs)
    else:
        guard_local_processes()
        ray.init(include_dashboard=False, **kwargs)
    return True


_GUARDS: list = []  # held for the life of the process: a watchdog whose pipe closes ends what it guards


def guard_local_processes() -> None:
    """Ray's processes of a local instance (GCS, raylet, agents, workers), started after this, die with this
    process even on SIGKILL: Ray's own fate sharing left its dashboard and runtime-env agents running for more
    than 30 s once (deca/processes.py's watchdog ends every process that inherited this process's marker)."""

    if not _GUARDS:
        _GUARDS.append(guard_self())
        if os.getsid(0) == os.getpid():  # a session of its own (a service, a test daemon): end all of it too
            _GUARDS[0].watch(os.getpid())


def check_resources(params: Params) -> None:
    """Refuse a run the Ray cluster has no room for (train/workers.py's check_room), instead of waiting."""
    import ray

    check_room(params, ray.cluster_resources(), ray.nodes())


def progress_sink():
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    @ray.remote(num_cpus=0)
    class ProgressSink:
        """Collects progress messages from rank 0 for the driver's progress bar."""

        def __init__(self):
            self.items: list[dict] = []

        def push(self, item: dict) -> None:
            self.items.append(item)

        def drain(self) -> list[dict]:
            items, self.items = self.items, []
            return items

    # on the driver's node: a node that fails during training must not take the progress messages with it
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    return ProgressSink.options(scheduling_strategy=here).remote()


def fit_in_thread(trainer, stop: threading.Event | None = None, watch: Callable[[], None] | None = None):
    """`trainer.fit()` in a helper thread. In the main thread, Ray Train replaces the SIGINT handler with its
    own, which ends the process with status 0 or 1, no message, and the MLflow run left RUNNING; from a
    thread it does not, and Ctrl-C reaches `fit` as KeyboardInterrupt (the run is marked KILLED, Ray is
    shut down, and the checkpoints written so far are kept for `--resume`). In local mode the training runs
    in that thread itself: `stop` (see local_mode.StopWhenSet) ends it at its next step (stop_local).
    `watch` is called every half second while it runs (an elastic run's MinWorkersWatch: its error ends the run)."""
    box: dict[str, Any] = {}
    ended = threading.Event()  # not thread.is_alive(): a join that Ctrl-C interrupted can leave it False early

    def target() -> None:
        try:
            box["result"] = trainer.fit()
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread
            box["error"] = exc
        finally:
            ended.set()

    threading.Thread(target=target, name="ray-train-fit", daemon=True).start()
    try:
        while not ended.wait(0.5):
            if watch is not None:
                watch()
    except BaseException:
        if stop is not None:
            stop_local(ended, stop)
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def stop_local(ended: threading.Event, stop: threading.Event) -> None:
    """End a local-mode training thread at its next step and wait until it has `ended`, however long a loaded
    machine takes: a process that exits while that thread is inside torch aborts ("terminate called without an
    active exception", status -6) instead of leaving its run KILLED and resumable. A second Ctrl-C quits at
    once (status 130, the MLflow run left RUNNING; `--resume` still continues from the last checkpoint)."""
    stop.set()
    print("stopping at the end of this step (Ctrl-C again to quit at once)", file=sys.stderr, flush=True)
    try:
        while not ended.wait(0.5):
            pass
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        os._exit(130)
