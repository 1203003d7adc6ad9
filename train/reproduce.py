"""The round trip of a training run: is this workspace the one it came from, and does retraining give its weights?

- `recorded_lineage`: the run's lineage record (lineage/lineage.json in its MLflow run, deca/lineage.py);
- `differences`: every way this workspace differs from it: the commit, a dirty tree, dvc.lock, the digest of
  each processed task/split, the vocabulary, the torch/ray versions (one line each: what, recorded, here);
- `retrain`: train again with the run's recorded (resolved) params and seed, as a new run
  ``<run>-reproduced-<time>`` next to it (never registered);
- `compare_weights`: the two best models tensor by tensor: bit-identical, or the largest absolute
  difference per tensor that differs (a CPU run with the same thread count should be identical).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

from deca.config import Params, from_dict
from deca.errors import ConfigError
from deca.lineage import data_digests, git_state, versions


def recorded_lineage(uri: str, run_id: str) -> dict[str, Any]:
    """The lineage record the run logged when it started; ConfigError when it has none."""
    from deca.metric_logging import client

    with tempfile.TemporaryDirectory() as tmp:
        try:
            path = client(uri).download_artifacts(run_id, "lineage/lineage.json", tmp)
            return json.loads(Path(path).read_text(encoding="utf-8"))
        except Exception:  # noqa: BLE001 - MLflow's errors for a missing artifact vary by store
            raise ConfigError(f"run {run_id} in {uri} recorded no lineage (trained before lineage was recorded): "
                              "there is nothing to check the workspace against") from None


def registered_run(source: str, uri: str) -> str:
    """The run name (under train.storage_dir) that trained the registered version `source` (models:/NAME/VERSION
    or models:/NAME@ALIAS) in the store `uri`: the version's ``deca.run`` tag, set by `deca register`."""
    from deca.metric_logging import client
    from deca.runs import MODEL_URI, URI_FORMS

    match = MODEL_URI.fullmatch(source)
    if match is None:
        raise ConfigError(f"{source}: expected {URI_FORMS}")
    mlflow_client = client(uri)
    try:
        mv = (mlflow_client.get_model_version_by_alias(match["name"], match["alias"]) if match["alias"]
              else mlflow_client.get_model_version(match["name"], match["version"]))
    except Exception:  # noqa: BLE001 - MLflow's error for a missing version or alias
        raise ConfigError(f"{source}: no such model version in {uri} "
                          f"(`deca register --list --name {match['name']}` shows its versions)") from None
    run = (mv.tags or {}).get("deca.run")
    if not run:
        raise ConfigError(f"{source}: version {mv.version} does not name the run that trained it (no deca.run tag); "
                          "reproduce that run by its name")
    return run


def differences(record: Mapping[str, Any], project: Path, params: Mapping[str, Any]) -> list[str]:
    """One line per difference between this workspace and the recorded lineage (none: the same inputs)."""
    from train.tracking import vocab_fingerprint

    found: list[str] = []

    def differ(what: str, recorded: Any, here: Any) -> None:
        if recorded != here:
            found.append(f"{what}: recorded {recorded}, here {here}")

    now = git_state(project)
    differ("commit", record.get("commit"), now["commit"])
    if now["dirty"]:
        found.append("commit: the tree here has uncommitted changes")
    lock = project / "dvc.lock"
    here_lock = hashlib.sha256(lock.read_bytes()).hexdigest() if lock.is_file() else None
    differ("dvc.lock sha256", (record.get("dvc_lock") or {}).get("sha256"), here_lock)
    tasks = sorted({name.rsplit("/", 1)[0] for name in record.get("data") or {}})
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


def retrain(params: Mapping[str, Any], run_name: str, project: Path, progress: bool = True):
    """Train again with the recorded params (never registered) as run ``<run_name>-reproduced-<time>``."""
    from train.driver import fit

    p = from_dict(Params, params)
    p = dataclasses.replace(p, train=dataclasses.replace(p.train, register_model=None))
    name = f"{run_name}-reproduced-{time.strftime('%Y%m%d-%H%M%S')}"
    return fit(p, run_name=name, progress=progress, project=project)


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
