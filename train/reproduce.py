"""The round trip of a training run: is this workspace the one it came from, and does retraining give its weights?

A run is its MLflow run (deca/run_source.py: a registered version, a run folder or a run id), never a run
folder's name, which later runs reuse: what is checked and retrained is what that MLflow run recorded.

- `recorded_lineage`, `recorded_params`: the run's lineage record (lineage/lineage.json, deca/lineage.py) and
  resolved params (config/params.yaml), with `rebase` moving its paths under this checkout;
- `differences`: every way this workspace differs from it: the code (tracked files against the recorded commit,
  the outputs the pipeline rewrites left out), a tree that was dirty when it trained, the prepare stages of
  its tasks in dvc.lock, the digest of each processed task/split, the vocabulary, the torch/ray versions;
- `recorded_weights`: its best model as it logged it (the registered version's model, else its newest);
- `retrain`: train again with its params and seed into ``<storage>/reproduce-<run id[:8]>-<time>``, a run folder
  marked as a reproduction (deca.runs.REPRODUCTION): no command takes it as the latest run until
  deca.runs.adopt;
- `compare_weights`: the two best models tensor by tensor: bit-identical, or the largest absolute
  difference per tensor that differs (a CPU run with the same thread count should be identical).
"""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import yaml

from deca.config import Params, from_dict
from deca.errors import ConfigError
from deca.lineage import code_changes, data_digests, dvc_lock_state, versions
from deca.metric_logging import client
from deca.runs import REPRODUCTION, best_model_path
from train.tracking import logged_checkpoint, vocab_fingerprint

PATHS = (("data", "processed_dir"), ("data", "vocab_path"), ("train", "init_from"))


@contextlib.contextmanager
def quiet_downloads():
    """No MLflow download progress bars inside (they would bury the one line a refusal prints)."""
    key = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    before = os.environ.get(key)
    os.environ[key] = "false"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = before


def _artifact(uri: str, run_id: str, path: str) -> str:
    """The text of artifact `path` of the run; ConfigError when it has none."""
    with tempfile.TemporaryDirectory() as tmp:
        try:
            return Path(client(uri).download_artifacts(run_id, path, tmp)).read_text(encoding="utf-8")
        except Exception:  # noqa: BLE001 - MLflow's errors for a missing run or artifact vary by store
            raise ConfigError(f"run {run_id} in {uri} has no {path} (no such run there, or trained before it was "
                              "recorded): there is nothing to reproduce it from") from None


def recorded_lineage(uri: str, run_id: str) -> dict[str, Any]:
    """The lineage record the run logged when it started; ConfigError when it has none."""
    return json.loads(_artifact(uri, run_id, "lineage/lineage.json"))


def recorded_params(uri: str, run_id: str) -> dict[str, Any]:
    """The resolved params the run logged when it started (config/params.yaml)."""
    return yaml.safe_load(_artifact(uri, run_id, "config/params.yaml")) or {}


def rebase(params: Mapping[str, Any], record: Mapping[str, Any], project: Path) -> dict[str, Any]:
    """`params` with the data paths that lay under the run's project (its lineage's ``project``) moved under
    `project`: the same inputs in this checkout."""
    out, old = copy.deepcopy(dict(params)), record.get("project")
    for section, key in PATHS:
        value = (out.get(section) or {}).get(key)
        if old and value and Path(value).is_absolute() and Path(value).is_relative_to(old):
            out[section][key] = str(project / Path(value).relative_to(old))
    return out


def code_differences(record: Mapping[str, Any], project: Path) -> list[str]:
    """How the code here differs from the run's: its commit, the files changed since, a tree that was dirty."""
    commit, found = record.get("commit"), []
    if commit is None:
        found.append("commit: the run recorded none (its project was not a git work tree)")
    else:
        changed = code_changes(project, commit)
        if changed is None:
            found.append(f"commit: {commit} is not in this repository (git fetch it)")
        elif changed:
            found.append(f"code: {len(changed)} file(s) differ from the recorded commit {commit[:12]}: "
                         + ", ".join(changed[:5]) + (", ..." if len(changed) > 5 else ""))
    if record.get("dirty"):
        found.append("commit: the run's tree had uncommitted changes, so its code is not known exactly")
    return found


def differences(record: Mapping[str, Any], project: Path, params: Mapping[str, Any]) -> list[str]:
    """One line per difference between this workspace and the recorded lineage (none: the same inputs)."""
    found = code_differences(record, project)

    def differ(what: str, recorded: Any, here: Any) -> None:
        if recorded != here:
            found.append(f"{what}: recorded {recorded}, here {here}")

    tasks = sorted({name.rsplit("/", 1)[0] for name in record.get("data") or {}})
    here_lock = (dvc_lock_state(project, tasks) or {}).get("tasks") or {}
    for task, stage in sorted(((record.get("dvc_lock") or {}).get("tasks") or {}).items()):
        for kind in ("processed", "raw"):
            here = (here_lock.get(task) or {}).get(kind) or {}
            for path, md5 in sorted((stage.get(kind) or {}).items()):
                differ(f"dvc.lock prepare@{task} {path} md5", md5, here.get(path))
    here_data = data_digests((params.get("data") or {}).get("processed_dir") or "data/processed", tasks)
    for name, sha in sorted((record.get("data") or {}).items()):
        differ(f"data {name}", sha, here_data.get(name))
    vocab = (params.get("data") or {}).get("vocab_path")
    here_vocab = vocab_fingerprint(vocab)["sha256"] if vocab and Path(vocab).is_file() else None
    differ("vocabulary sha256", record.get("vocab_sha256"), here_vocab)
    here_versions = versions()
    for name in ("torch", "ray"):
        differ(f"{name} version", (record.get("versions") or {}).get(name), here_versions.get(name))
    return found


def recorded_weights(source, dst: Path) -> Path:
    """The best model run `source` (deca.run_source.RunSource) logged, downloaded into `dst`: the registered
    version's model, else the newest the run logged, else its run folder's best model; ConfigError without."""
    path = logged_checkpoint(source.uri, source.run_id, dst, source.model_id)
    if path is None and source.folder is not None and best_model_path(source.folder).is_file():
        path = best_model_path(source.folder)
    if path is None:
        raise ConfigError(f"run {source.run_id} logged no model to compare with (`deca register --run DIR` logs "
                          "a run's best model)")
    return path


def retrain(params: Mapping[str, Any], run_id: str, project: Path, storage_dir: str | Path, progress: bool = True):
    """Train again with the recorded params (never registered) into the reproduction folder (module docstring)."""
    from train.driver import fit

    p = from_dict(Params, params)
    p = dataclasses.replace(p, train=dataclasses.replace(p.train, register_model=None, storage_dir=str(storage_dir)))
    name = f"reproduce-{run_id[:8]}-{time.strftime('%Y%m%d-%H%M%S')}"
    return fit(p, run_name=name, progress=progress, project=project, marks={REPRODUCTION: run_id})


def compare_weights(recorded: Path, new: Path) -> dict[str, float]:
    """{tensor name: largest absolute difference} of the tensors that are not bit-identical (and 'inf' for a
    tensor only one side has, or of another shape)."""
    import torch

    from mqan.checkpoint import read_checkpoint

    a, b = read_checkpoint(recorded)["state_dict"], read_checkpoint(new)["state_dict"]
    out: dict[str, float] = {}
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if x is None or y is None or x.shape != y.shape:
            out[key] = float("inf")
        elif not torch.equal(x, y):
            out[key] = float((x.double() - y.double()).abs().max()) if x.is_floating_point() else float("inf")
    return out
