"""Which MLflow run a source names: a registered version, a run folder (or its name), or an MLflow run id.

A run folder's name is reused (every `dvc repro` trains ``checkpoints/pipeline`` again), so a registered
version is followed by the run id MLflow recorded for it, never by the folder its ``deca.run`` tag names;
a run folder stands for the run its record names now. `deca lineage` and `deca reproduce` take these sources.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deca.config import tracking_uri
from deca.errors import ConfigError
from deca.metric_logging import check_server, client
from deca.runs import MODEL_URI, RUN_FILE, URI_FORMS, read_run_file, run_folder

RUN_ID = r"[0-9a-f]{32}"


@dataclass(frozen=True)
class RunSource:
    """The MLflow run a source names, in store `uri`; the run folder or the model version it was named by."""

    uri: str
    run_id: str
    folder: Path | None = None
    version: Any = None  # MLflow's ModelVersion

    @property
    def model_id(self) -> str | None:
        """The logged model the registered version points at (its model id, or its source models:/<id>); None
        when the source is not a version."""
        if self.version is None:
            return None
        source = self.version.source or ""
        return self.version.model_id or (source[len("models:/"):] if source.startswith("models:/m-") else None)


def store_uri() -> str:
    """The store `deca` commands use: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db in this directory."""
    uri = tracking_uri(Path.cwd())
    check_server(uri)
    return uri


def model_version(uri: str, name: str, version: str | None, alias: str | None):
    """MLflow's ModelVersion of `name` at `version` or `alias` in `uri`; ConfigError when there is none."""
    c = client(uri)
    try:
        return c.get_model_version_by_alias(name, alias) if alias else c.get_model_version(name, version)
    except Exception:  # noqa: BLE001 - MLflow's error for a missing version or alias
        what = f"@{alias}" if alias else f"/{version}"
        raise ConfigError(f"models:/{name}{what}: no such model version in {uri} "
                          f"(`deca register --list --name {name}` shows its versions)") from None


def resolve_run(source: str, storage_dir: str | Path) -> RunSource:
    """The MLflow run that `source` names (see the module docstring); ConfigError when it names none."""
    match = MODEL_URI.fullmatch(source)
    if match:
        uri = store_uri()
        mv = model_version(uri, match["name"], match["version"], match["alias"])
        return RunSource(uri, mv.run_id, version=mv)
    if source.startswith("models:/"):
        raise ConfigError(f"{source}: expected {URI_FORMS}")
    if re.fullmatch(RUN_ID, source) and not (Path(storage_dir) / source).exists():
        return RunSource(store_uri(), source)
    folder = run_folder(source, storage_dir)
    if not (folder / RUN_FILE).is_file():
        raise ConfigError(f"{folder}: the run has no {RUN_FILE}, so no MLflow run and no lineage; retrain it")
    record = read_run_file(folder / RUN_FILE)
    return RunSource(record["tracking_uri"], record["mlflow_run_id"], folder=folder)
