"""One interface for logging metrics, tags and artifacts, used by training, evaluation and scoring.

`MetricLogger` is the Protocol (after torchtune's ``training/metric_logging.py``); `MLflowLogger` writes
into an existing MLflow run through the client (never starting or ending it, so a run owned by another
process keeps its status), `MemoryLogger` keeps everything in memory (tests, and `--no-mlflow`).

Metric names are one namespace, shared by training and evaluation:
  train/...                       training loss, learning rate, throughput (train/tracking.py)
  <split>/<task>/<metric>         every metric of eval.api.score_task, and <split>/<task>/headline
  <split>/decascore               the sum of the headline metrics of the decaNLP tasks present
  <split>/<task>/source/...       `deca evaluate`: the paper's Figure 3 (eval.sources; no task metric)
  validation/score                the model-selection score of a training run (sum of its tasks' headlines)
The step is the training iteration of the weights that were scored.
"""
from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path
from typing import Any, Mapping, Protocol
from urllib.parse import unquote, urlparse

import requests

from deca.errors import DecaError, WriteError
from deca.io import WRITE_ERRNOS

BATCH = 500  # MLflow's log_batch takes at most 1000 metrics


class MetricLogger(Protocol):
    """Where metrics of one run go."""

    def log_metrics(self, values: Mapping[str, float], step: int) -> None: ...

    def set_tag(self, key: str, value: Any) -> None: ...

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None: ...


def client(uri: str):
    """An MlflowClient for `uri`."""
    from mlflow import MlflowClient

    return MlflowClient(tracking_uri=uri)


class TrackingServerDown(DecaError):
    """The MLflow tracking server named by the URI does not answer."""


def check_server(uri: str, timeout: float = 10.0) -> None:
    """Fail at once, naming `uri`, when an http(s) tracking server does not answer (MLflow's client would
    retry for minutes first), or answers as something other than MLflow (a page, not its JSON API). An
    authenticating proxy's 401/403 counts as up; other URIs pass."""
    if not uri.startswith(("http://", "https://")):
        return

    fix = ("  fix: start it (e.g. `bash infra/mlflow/server.sh`), point MLFLOW_TRACKING_URI at a running server, "
           "or unset MLFLOW_TRACKING_URI to track into sqlite:///mlflow.db here")
    try:
        answer = requests.get(uri.rstrip("/") + PROBE, timeout=timeout)
    except requests.exceptions.SSLError:
        return  # something answers TLS; MLflow's client applies MLFLOW_TRACKING_INSECURE_TLS / _SERVER_CERT_PATH
    except (requests.ConnectionError, requests.Timeout) as exc:
        why = re.search(r"\[Errno -?\d+\] ([^'\")]+)", str(exc))
        reason = (why.group(1) if why else f"no answer within {timeout:g} s" if isinstance(exc, requests.Timeout)
                  else type(exc).__name__)
        raise TrackingServerDown(f"MLflow tracking server {uri} is not reachable ({reason})\n{fix}") from None
    if answer.status_code not in (401, 403, 407) and not _json_object(answer):
        kind = answer.headers.get("content-type", "no content type").split(";")[0]
        raise TrackingServerDown(f"{uri} answers, but not as an MLflow tracking server (HTTP {answer.status_code}, "
                                 f"{kind}, to {PROBE.split('?')[0]}): MLFLOW_TRACKING_URI names another service\n"
                                 f"{fix}")


# What MLflow's REST API answers in JSON (an error too) and another web server does not.
PROBE = "/api/2.0/mlflow/experiments/search?max_results=1"


def _json_object(answer) -> bool:
    try:
        return isinstance(answer.json(), dict)
    except ValueError:
        return False


def finite(values: Mapping[str, Any]) -> dict[str, float]:
    """The numeric, finite entries of `values` as floats (MLflow refuses NaN / None / strings)."""
    return {k: float(v) for k, v in values.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}


class MLflowLogger:
    """Logs into the existing MLflow run `run_id` at `uri`, metrics in batches."""

    def __init__(self, uri: str, run_id: str):
        self.uri, self.run_id = uri, run_id
        self.client = client(uri)

    def log_metrics(self, values: Mapping[str, float], step: int) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(k, v, now, int(step)) for k, v in finite(values).items()]
        for i in range(0, len(batch), BATCH):
            self.client.log_batch(self.run_id, metrics=batch[i:i + BATCH])

    def set_tag(self, key: str, value: Any) -> None:
        self.client.set_tag(self.run_id, key, str(value))

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        """Copy a file or directory into the run's artifacts; a full local artifact store is a WriteError naming
        where it went (MLflow's copy names no file)."""
        path = Path(path)
        try:
            if path.is_dir():
                self.client.log_artifacts(self.run_id, str(path), artifact_path)
            else:
                self.client.log_artifact(self.run_id, str(path), artifact_path)
        except OSError as exc:
            err = self._write_error(exc, path, artifact_path)
            if err is exc:
                raise
            raise err from exc

    def _write_error(self, exc: OSError, path: Path, artifact_path: str | None) -> OSError:
        uri = self.client.get_run(self.run_id).info.artifact_uri
        if isinstance(exc, WriteError) or exc.errno not in WRITE_ERRNOS or urlparse(uri).scheme not in ("", "file"):
            return exc
        root = Path(unquote(urlparse(uri).path))
        target = root / (artifact_path or "") / (path.name if path.is_file() else "")
        return WriteError(exc.errno, os.strerror(exc.errno), target, where=root)


class MemoryLogger:
    """Keeps what is logged: `metrics[name] -> [(step, value)]`, `tags`, `artifacts` (paths)."""

    def __init__(self):
        self.metrics: dict[str, list[tuple[int, float]]] = {}
        self.tags: dict[str, str] = {}
        self.artifacts: list[tuple[str, str | None]] = []

    def log_metrics(self, values: Mapping[str, float], step: int) -> None:
        for k, v in finite(values).items():
            self.metrics.setdefault(k, []).append((int(step), v))

    def set_tag(self, key: str, value: Any) -> None:
        self.tags[key] = str(value)

    def log_artifact(self, path: str | Path, artifact_path: str | None = None) -> None:
        self.artifacts.append((str(path), artifact_path))

    def latest(self) -> dict[str, float]:
        """The last value of every metric."""
        return {k: points[-1][1] for k, points in self.metrics.items()}


def active_run_logger() -> MLflowLogger:
    """A logger for the active MLflow run, else the run named by $MLFLOW_RUN_ID (at $MLFLOW_TRACKING_URI)."""
    import mlflow

    run = mlflow.active_run()
    if run is not None:
        return MLflowLogger(mlflow.get_tracking_uri(), run.info.run_id)
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if run_id:
        return MLflowLogger(mlflow.get_tracking_uri(), run_id)
    raise DecaError("--mlflow: no active MLflow run; set MLFLOW_RUN_ID (and MLFLOW_TRACKING_URI) to the run "
                    "to log to, or log inside `with mlflow.start_run():`")
