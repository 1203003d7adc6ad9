"""A run's model in MLflow: logged as an MLflow model, registered, promoted, and found again by URI.

- `register_run`: log a run's best model (best/model.pt) as the pyfunc model ``runs:/<run id>/model`` of the
  run's own MLflow run (infer/mlflow_model.py), once per checkpoint (a model already logged from the
  same file is reused), and register it as a new version of a Model Registry name, with aliases;
- `promote`: point an alias (``champion``) at a version; `versions`: what a name holds;
- finding a registered model again by URI (`models:/...` for `deca predict`, `deca evaluate`, `deca serve
  --model`) is infer/model_uri.py's, which does not depend on this module.

The run's MLflow run and store come from its record (deca_run.json); the registry is the store of
$MLFLOW_TRACKING_URI (default sqlite:///mlflow.db here) for `promote` and `versions`
(MLflow's MLFLOW_REGISTRY_URI, when set, names another). Works with a local sqlite store and with a
tracking server (infra/mlflow), whose artifacts are proxied.
"""
from __future__ import annotations

import contextlib
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import mlflow
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from deca.errors import ConfigError, DataError
from deca.io import file_sha256
from deca.lineage import PREFIX
from deca.metric_logging import check_server
from deca.runs import RUN_FILE, best_model_path, read_run_file
from infer.mlflow_model import CHECKPOINT_TAG, NAME, log_model
from infer.model_uri import model_version, registry_uri, tracking

ALIAS = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass
class Registered:
    """What `register_run` did: the logged model and, when registered, the version and its aliases."""

    run_id: str
    model_uri: str  # runs:/<run id>/model
    logged: bool  # False when the run already had this checkpoint's model
    name: str | None = None
    version: str | None = None
    aliases: tuple[str, ...] = ()


def register_run(run_dir: str | Path, name: str | None = None, aliases: tuple[str, ...] = ()) -> Registered:
    """Log the best model of run `run_dir` into its MLflow run (unless already there) and, with `name`,
    register it as a new version of `name`, moving `aliases` to that version."""
    run_dir = Path(run_dir)
    checkpoint = best_model_path(run_dir)
    if not checkpoint.is_file():
        raise DataError(checkpoint, "the run has no best model", fix="train until at least one validation")
    record = read_run_file(run_dir / RUN_FILE) if (run_dir / RUN_FILE).is_file() else {}
    run_id, uri = record.get("mlflow_run_id"), record.get("tracking_uri")
    if not run_id or not uri:
        raise ConfigError(f"{run_dir}: the run has no MLflow run in its record ({RUN_FILE}); its model cannot be "
                          "logged (train it with MLflow tracking, the default)")
    check_server(uri)
    for alias in aliases:
        check_alias(alias)
    with tracking(uri) as client:
        model_id = logged_model(client, run_id, file_sha256(checkpoint))
        done = Registered(run_id, f"runs:/{run_id}/{NAME}", logged=model_id is None)
        if model_id is None:
            with resumed(client, run_id):
                model_id = log_model(checkpoint).model_id
        if name:
            version = mlflow.register_model(f"models:/{model_id}", name,
                                            tags={"deca.run": run_dir.name, **lineage_tags(client, run_id)})
            for alias in aliases:
                client.set_registered_model_alias(name, alias, version.version)
            done.name, done.version, done.aliases = name, str(version.version), tuple(aliases)
    return done


def lineage_tags(client: MlflowClient, run_id: str) -> dict[str, str]:
    """The ``lineage.*`` tags of a run (deca/lineage.py), which a registered version carries too."""
    return {k: v for k, v in client.get_run(run_id).data.tags.items() if k.startswith(PREFIX)}


def logged_model(client: MlflowClient, run_id: str, sha256: str) -> str | None:
    """The id of the model `model` the run already logged from a checkpoint with this sha256, if any."""
    run = client.get_run(run_id)
    models = client.search_logged_models(experiment_ids=[run.info.experiment_id],
                                         filter_string=f"source_run_id = '{run_id}'")
    found = [m for m in models if m.name == NAME and m.tags.get(CHECKPOINT_TAG) == sha256]
    return found[0].model_id if found else None


@contextlib.contextmanager
def resumed(client: MlflowClient, run_id: str):
    """The run made the active MLflow run, its status (FINISHED, KILLED, RUNNING, ...) restored after."""
    status = client.get_run(run_id).info.status
    try:
        with mlflow.start_run(run_id=run_id):
            yield
    finally:
        if client.get_run(run_id).info.status != status:
            client.update_run(run_id, status=status)


def check_alias(alias: str) -> str:
    """`alias`, or a ConfigError when MLflow would refuse it (or read it as a version)."""
    if not ALIAS.fullmatch(alias) or re.fullmatch(r"[vV]\d+|latest", alias):
        raise ConfigError(f"--alias {alias!r}: an alias is a name of letters, digits, '_' and '-' (not 'latest' or "
                          "v<number>, which MLflow reserves), e.g. champion")
    return alias


def promote(name: str, version: str, alias: str, uri: str | None = None) -> str | None:
    """Point `alias` of `name` at `version`; returns the version it pointed at before (None if none)."""
    check_alias(alias)
    with tracking(uri or registry_uri()) as client:
        model_version(client, name, version=version)
        before = alias_holder(client, name, alias)
        client.set_registered_model_alias(name, alias, version)
    return before


def alias_holder(client: MlflowClient, name: str, alias: str) -> str | None:
    """The version `alias` of `name` points at, or None."""
    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def versions(name: str, uri: str | None = None) -> list[dict]:
    """[{version, aliases, run_id, run, iteration, created}] of registered model `name`, newest first."""
    with tracking(uri or registry_uri()) as client:
        try:
            aliases = client.get_registered_model(name).aliases
        except MlflowException:
            raise ConfigError(f"no registered model {name!r} in {mlflow.get_registry_uri()}") from None
        found = client.search_model_versions(f"name = '{name}'")
    return [{"version": str(v.version), "aliases": sorted(a for a, n in aliases.items() if str(n) == str(v.version)),
             "run_id": v.run_id, "run": v.tags.get("deca.run"), "created": v.creation_timestamp}
            for v in sorted(found, key=lambda v: -int(v.version))]



def run_and_models(uri: str, run_id: str):
    """(the MLflow Run `run_id` of store `uri`, ids of the models it logged, its lineage/lineage.json or None);
    ConfigError naming the store when there is no such run."""
    client = MlflowClient(tracking_uri=uri)
    try:
        run = client.get_run(run_id)
    except MlflowException:
        raise ConfigError(f"no MLflow run {run_id} in {uri} (set MLFLOW_TRACKING_URI to the store it is in)") from None
    models = client.search_logged_models(experiment_ids=[run.info.experiment_id],
                                         filter_string=f"source_run_id = '{run_id}'")
    with tempfile.TemporaryDirectory() as tmp:
        try:
            record = json.loads(Path(client.download_artifacts(run_id, "lineage/lineage.json", tmp)).read_text())
        except (MlflowException, OSError):
            record = None
    return run, [m.model_id for m in models], record
