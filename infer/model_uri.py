"""Find a registered model again by URI: the checkpoint file of ``models:/<name>/<version>`` or
``models:/<name>@<alias>``, downloaded once into a cache ($DECA_MODEL_CACHE, default ~/.cache/deca/models), for
`deca predict`, `deca evaluate` and `deca serve --model`. Reading only: registering and promoting are
infer/registry.py's (which also logs models, so the commands that only read a model do not depend on it).
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import mlflow
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from mlflow.models import Model
from mlflow.tracking._tracking_service import utils

from deca.config import tracking_uri
from deca.errors import ConfigError
from deca.metric_logging import check_server
from deca.runs import MODEL_URI, URI_FORMS


@contextlib.contextmanager
def tracking(uri: str):
    """MLflow's fluent API (and so its registry, unless MLFLOW_REGISTRY_URI says otherwise) pointed at `uri` for
    the duration; the URI set before, and $MLFLOW_TRACKING_URI, which MLflow rewrites, are restored after."""
    before, env = getattr(utils, "_tracking_uri", None), os.environ.get("MLFLOW_TRACKING_URI")
    mlflow.set_tracking_uri(uri)
    try:
        yield MlflowClient(tracking_uri=uri)
    finally:
        mlflow.set_tracking_uri(before)
        if env is not None:
            os.environ["MLFLOW_TRACKING_URI"] = env


def registry_uri() -> str:
    """The store `deca` commands use: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in this directory."""
    uri = tracking_uri(Path.cwd())
    check_server(uri)
    return uri


def model_version(client: MlflowClient, name: str, version: str | None = None, alias: str | None = None):
    """The ModelVersion of `name` at `version` or `alias`; ConfigError naming the store when there is none."""
    try:
        if alias:
            return client.get_model_version_by_alias(name, alias)
        return client.get_model_version(name, version)
    except MlflowException:
        what = f"@{alias}" if alias else f"/{version}"
        raise ConfigError(f"models:/{name}{what}: no such model version in {mlflow.get_registry_uri()} "
                          f"(`deca register --list --name {name}` shows its versions)") from None


def model_cache() -> Path:
    """Where registered models are downloaded: $DECA_MODEL_CACHE, default ~/.cache/deca/models."""
    return Path(os.environ.get("DECA_MODEL_CACHE") or Path.home() / ".cache" / "deca" / "models")


def model_checkpoint(uri: str, store: str | None = None) -> Path:
    """The checkpoint file of the registered model `uri` (URI_FORMS), downloaded once into the cache."""
    return registered_checkpoint(uri, store)[0]


def parse_model_uri(uri: str):
    """The match of `uri` against URI_FORMS (groups name, version, alias); ConfigError naming the forms if none."""
    match = MODEL_URI.fullmatch(uri)
    if match is None:
        raise ConfigError(f"--model {uri}: expected {URI_FORMS} (or use --run DIR / --checkpoint FILE)")
    return match


def alias_version(name: str, alias: str, store: str) -> str:
    """The version `alias` of registered model `name` points at now in `store` (ConfigError if none)."""
    with tracking(store) as client:
        return str(model_version(client, name, alias=alias).version)


def registered_checkpoint(uri: str, store: str | None = None) -> tuple[Path, str]:
    """(the checkpoint file, the version) of the registered model `uri` (URI_FORMS), downloaded once into the
    cache; an alias is resolved to the version it points at now."""
    match = parse_model_uri(uri)
    with tracking(store or registry_uri()) as client:
        mv = model_version(client, match["name"], match["version"], match["alias"])
        key = hashlib.sha256(f"{mlflow.get_registry_uri()}|{mv.name}|{mv.version}|{mv.source}".encode()).hexdigest()
        folder = model_cache() / f"{mv.name}-{mv.version}-{key[:12]}"
        if not (folder / "MLmodel").is_file():
            folder.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=folder.parent) as tmp:
                got = Path(mlflow.artifacts.download_artifacts(f"models:/{mv.name}/{mv.version}", dst_path=tmp))
                shutil.rmtree(folder, ignore_errors=True)
                got.rename(folder)
    flavor = Model.load(str(folder)).flavors.get("python_function", {})
    path = (flavor.get("artifacts") or {}).get("checkpoint", {}).get("path")
    if not path or not (folder / path).is_file():
        raise ConfigError(f"--model {uri}: version {mv.version} of {mv.name} is not a deca model (no checkpoint "
                          "artifact); register a run's model with `deca register --run NAME`")
    return folder / path, str(mv.version)
