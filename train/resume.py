"""Training runs on disk, and continuing a stopped run with the settings it was started with.

`deca train` records the resolved params of a run in its record (deca/runs.py). `--resume` continues
with those, not with whatever params.yaml says now: a run started with ``--set train.iterations=60``
continues to 60. A setting is changed on resume only when asked for explicitly with ``--set``; what
params.yaml changed in the meantime is listed and ignored.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import shutil
from pathlib import Path
from typing import Any, Mapping

from deca.checks import check_values, leaves
from deca.config import Params, from_dict, set_dotted
from deca.runs import RUN_FILE, read_run_file
from train.workers import PLACEMENT_KEYS

log = logging.getLogger(__name__)

def recorded_params(run_file: Path) -> Params | None:
    """The params a run was started with (None for a run recorded before they were kept)."""
    info = read_run_file(run_file)
    if "params" not in info:
        return None
    return from_dict(Params, info["params"], where=f"{run_file}: params")


def params_for_resume(run_file: Path, current: Params, overrides: Mapping[str, Any]) -> Params:
    """The run's own params with `overrides` (the command's --set) applied; differences between them and
    `current` (params.yaml now) that no --set asked for are reported and ignored."""
    recorded = recorded_params(run_file)
    if recorded is None:
        log.warning("%s does not record the run's params: continuing with the current ones", run_file)
        return current
    params = _apply(recorded, overrides)
    now, then = dict(leaves(current)), dict(leaves(params))
    ignored = [f"{k}: {then[k]!r} (now {now[k]!r} in params.yaml)" for k in sorted(now)
               if now[k] != then[k] and k not in overrides and not k.startswith(("data.", "evaluate."))]
    if ignored:
        log.warning("resuming with the run's own settings; ignored changes (use --set KEY=VALUE to change one): %s",
                    "; ".join(ignored))
    return params


def changed_by(overrides: Mapping[str, Any], recorded: Params) -> dict[str, Any]:
    """The overrides that change a recorded setting (logged to MLflow as a tag of the resumed run)."""
    then = dict(leaves(recorded))
    return {k: v for k, v in overrides.items() if then.get(k, object()) != v}


def _apply(params: Params, overrides: Mapping[str, Any]) -> Params:
    raw = set_dotted(dataclasses.asdict(params), overrides)
    out = from_dict(Params, raw, where="--set")
    check_values(out, {k: f"--set {k}={v}" for k, v in overrides.items()})
    return out


def auto_resume(run_dir: Path, params: Params) -> bool:
    """For a pipeline stage that reruns one run name (`deca train --auto-resume`, DVC's train stage): True to
    continue the run in `run_dir`, which an interruption left with the same params and a checkpoint; else
    the folder (another configuration's run, or a finished one being rerun) is removed and False returned. Params
    that only place the work (the number of workers, ...: result_params) may differ."""
    run_file = run_dir / RUN_FILE
    if not run_dir.exists():
        return False
    why = None
    if not run_file.exists():
        why = "it has no run record"
    else:
        info = read_run_file(run_file)
        if info.get("finished"):
            why = "it finished"
        elif result_params(info.get("params") or {}) != result_params(dataclasses.asdict(params)):
            why = "its params differ from the current ones"
        elif not registered_checkpoints(run_dir):
            why = "it has no checkpoint yet"
    if why is None:
        log.info("continuing the interrupted run %s from its latest checkpoint", run_dir)
        return True
    log.info("starting %s over: %s", run_dir, why)
    shutil.rmtree(run_dir)
    return False


def result_params(params: dict) -> dict:
    """`params` (a dict) without the train.* keys that only place the work (train/workers.py's PLACEMENT_KEYS):
    the number of workers, their resources and restarts do not change the model."""
    train = {k: v for k, v in (params.get("train") or {}).items() if k not in PLACEMENT_KEYS}
    return {**params, "train": train}


def registered_checkpoints(run_dir: Path) -> list[str]:
    """The checkpoints Ray Train registered for the run (its snapshot file): a `checkpoint_<n>/` folder that
    is not listed there was cut off while being written and is not restored."""
    try:
        snapshot = json.loads((run_dir / "checkpoint_manager_snapshot.json").read_text(encoding="utf-8"))
        return [r["checkpoint_dir_name"] for r in snapshot.get("checkpoint_results", [])]
    except (OSError, ValueError, KeyError, TypeError):
        return []
