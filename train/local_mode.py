"""Ray Train's local mode (`train.num_workers: 0`): the same worker function in this process, no Ray workers.

With ``ScalingConfig(num_workers=0)`` Ray Train V2 runs the training function in the driver's process (its
LocalTorchController; Ray 2.60): ``ray.train.get_context()`` says rank 0 of 1, no Ray instance is started,
no process group is formed, and ``ray.train.report`` only keeps the last checkpoint object in memory: it
copies nothing to ``RunConfig.storage_path``, keeps no ``num_to_keep``, restores nothing
(``ray.train.get_checkpoint()`` is None at the start, even where a run folder holds checkpoints) and no
``FailureConfig`` restarts anything. This module gives the run folder what Ray Train gives it otherwise:
each reported checkpoint copied into ``<run>/checkpoint_<iteration>/`` and registered in
``checkpoint_manager_snapshot.json`` with the fields Ray Train's checkpoint manager writes (so a run started
in local mode resumes on workers, and back), the oldest pruned to ``train.checkpoints_to_keep``, and the
latest one handed to the worker when a run resumes. Progress messages go through an in-process queue
(`LocalSink`) instead of a Ray actor.
"""
from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path
from typing import Any

from deca.errors import ConfigError
from deca.io import replace_dir, write_json

SNAPSHOT = "checkpoint_manager_snapshot.json"


def is_local(params: Any) -> bool:
    """Whether `params` train in Ray Train's local mode."""
    return params.train.num_workers == 0


def check_environment() -> None:
    """Local mode trains in this process: with RAY_ADDRESS naming a cluster, that is not what was meant."""
    address = os.environ.get("RAY_ADDRESS")
    if address:
        raise ConfigError(f"train.num_workers = 0 trains in this process (Ray Train's local mode), not on the "
                          f"cluster RAY_ADDRESS={address} names; set train.num_workers >= 1 to train there, or "
                          f"unset RAY_ADDRESS")


class StopWhenSet:
    """A recipe hook (train/recipe.py) that ends a local-mode training at its next step once `event` is set: on
    Ctrl-C the driver stops the training thread before it marks the run KILLED (with workers, ray.shutdown ends
    them)."""

    def __init__(self, event: threading.Event):
        self.event = event

    def __call__(self, recipe) -> None:
        if self.event.is_set():
            raise KeyboardInterrupt


class LocalSink:
    """The progress messages of a local-mode run: what the Ray actor of train.ray_session does, in this process."""

    def __init__(self):
        self._items: list[dict] = []
        self._lock = threading.Lock()

    def push(self, item: dict) -> None:
        with self._lock:
            self._items.append(item)

    def drain(self) -> list[dict]:
        with self._lock:
            items, self._items = self._items, []
        return items


def _empty_snapshot() -> dict[str, Any]:
    import ray

    return {"ray_version": ray.__version__, "checkpoint_results": [], "checkpoint_report_indices": [],
            "latest_checkpoint_result": None, "pending_training_results": [], "pending_validation_specs": [],
            "current_report_index": 0, "validated_checkpoint_dir_names": [],
            "timed_out_validation_checkpoint_dir_names": [], "failed_validation_checkpoint_dir_names": []}


def read_snapshot(run_dir: str | Path) -> dict[str, Any]:
    """The run's checkpoint register (a new one when the run has none)."""
    path = Path(run_dir) / SNAPSHOT
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else _empty_snapshot()


def _copy_into(source: Path, dest: Path) -> None:
    """Copy the tree `source` into the folder `dest`, file by file: the first failed write raises its OSError
    (shutil.copytree gathers them into one shutil.Error that names no errno)."""
    for path in sorted(source.rglob("*")):
        target = dest / path.relative_to(source)
        if path.is_dir():
            target.mkdir(exist_ok=True)
        else:
            shutil.copy2(path, target)


def persist(directory: str | Path, metrics: dict[str, Any], name: str, run_dir: str | Path, keep: int) -> Path:
    """Copy the checkpoint `directory` to <run_dir>/<name> and register it as the latest, as Ray Train does with
    a reported checkpoint: the folder is written under a temporary name and renamed (a full disk is a
    WriteError naming the file), then the register is rewritten (atomically), then the checkpoints beyond
    the newest `keep` are deleted. Returns the folder."""
    run_dir = Path(run_dir)
    target = replace_dir(run_dir / name, lambda tmp: _copy_into(Path(directory), tmp))
    snapshot = read_snapshot(run_dir)
    entry = {"version": 0, "checkpoint_dir_name": name, "metrics": dict(metrics)}
    results = [(r, i) for r, i in zip(snapshot["checkpoint_results"], snapshot["checkpoint_report_indices"])
               if r["checkpoint_dir_name"] != name]
    results.append((entry, snapshot["current_report_index"]))
    dropped, results = results[:-keep], results[-keep:]
    snapshot.update(checkpoint_results=[r for r, _ in results], checkpoint_report_indices=[i for _, i in results],
                    latest_checkpoint_result=entry, current_report_index=snapshot["current_report_index"] + 1)
    write_json(run_dir / SNAPSHOT, snapshot)
    for r, _ in dropped:
        shutil.rmtree(run_dir / r["checkpoint_dir_name"], ignore_errors=True)
    return target


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The checkpoint a resumed run continues from: the latest one registered in the run folder (None: none),
    as Ray Train's ``get_checkpoint()`` gives it to workers."""
    latest = read_snapshot(run_dir).get("latest_checkpoint_result")
    if not latest:
        return None
    path = Path(run_dir) / latest["checkpoint_dir_name"]
    return path if path.is_dir() else None
