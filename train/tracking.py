"""MLflow tracking of training runs: one MLflow run per training job (kept across resumes).

The driver creates the run (resolved config as params, config and vocabulary fingerprint as artifacts);
the rank-0 worker logs metrics by iteration through deca.metric_logging, the phase (as a metric and a tag
at each change), the best checkpoint and the plots; the driver closes the run with its final status.
Other ranks never log.

Metric names:
  train/loss/<task>        mean training loss of that task's batches since the last log (all workers)
  train/loss               mean over every batch since the last log
  train/lr                 learning rate of the last update
  train/tokens_per_s       context+question+answer tokens per second, all workers together
  train/examples_per_s
  phase                    index of the schedule phase (a step chart: phases show on every plot)
  validation/<task>/<metric>  every metric eval.api returns, and validation/<task>/headline
  validation/decascore     the decaScore of the trained tasks (`deca evaluate` logs the same names)
  validation/score         the model-selection score (sum of the trained tasks' headlines), and best_score
  resumed_from_iteration   one point (at that iteration) each time the workers start from a checkpoint: an
                           automatic restart after a worker or node failure, or `deca train --resume`
Tags include resumed_from_iteration (the latest) and worker_nodes (<node IP>/<Ray node id> of each rank, as
placed by the latest attempt; train.placement_strategy decides the placement).
Tracking URI: $MLFLOW_TRACKING_URI, else ``sqlite:///<project>/mlflow.db`` with artifacts in
``<project>/mlruns`` (set explicitly: with sqlite MLflow would otherwise use ./mlruns of whatever
directory the experiment happens to be created from). A tracking server that does not answer stops
`deca train` before anything starts (deca.metric_logging.check_server).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any, Mapping

import yaml

from deca.config import tracking_uri  # noqa: F401  (re-exported: train code imports it from here
from deca.metric_logging import MetricLogger, MLflowLogger, client

PARAM_LIMIT = 6000  # MLflow's maximum param value length


def ensure_experiment(mlflow_client, name: str, artifact_root: str | Path | None) -> str:
    """The id of experiment `name`, created with an explicit artifact location when missing."""
    exp = mlflow_client.get_experiment_by_name(name)
    if exp is not None:
        return exp.experiment_id
    location = None if artifact_root is None else (Path(artifact_root).resolve() / name).as_uri()
    return mlflow_client.create_experiment(name, artifact_location=location)


def flatten(value: Any, prefix: str = "") -> dict[str, str]:
    """Nested dataclasses / mappings as dotted keys with string values (lists as JSON)."""
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    if isinstance(value, Mapping):
        out: dict[str, str] = {}
        for key, sub in value.items():
            out.update(flatten(sub, f"{prefix}{key}."))
        if not value and prefix:
            out[prefix[:-1]] = "{}"
        return out
    text = value if isinstance(value, str) else json.dumps(value)
    return {prefix[:-1]: text[:PARAM_LIMIT]}


def vocab_fingerprint(path: str | Path) -> dict[str, Any]:
    """sha256, size and token count of a vocabulary file (identifies the vocabulary a model needs)."""
    data = Path(path).read_bytes()
    return {"path": str(path), "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "tokens": data.count(b"\n")}


def start_run(uri: str, experiment: str, run_name: str, config: Mapping[str, Any], *, project: str | Path,
              vocab: Mapping[str, Any], tags: Mapping[str, str] | None = None) -> str:
    """Create the MLflow run of a training job: params, tags and the config / vocabulary artifacts."""
    from mlflow.entities import Param

    c = client(uri)
    artifact_root = Path(project) / "mlruns" if uri.startswith("sqlite:") else None
    exp_id = ensure_experiment(c, experiment, artifact_root)
    close_stale_runs(uri, exp_id)
    run = c.create_run(exp_id, run_name=run_name,
                       tags={"vocab.sha256": vocab["sha256"], **owner_tags(), **(tags or {})})
    run_id = run.info.run_id
    try:  # a failure (a full artifact store) leaves the run FAILED, not RUNNING
        params = [Param(k, v) for k, v in sorted(flatten(config).items())]
        for i in range(0, len(params), 100):
            c.log_batch(run_id, params=params[i:i + 100])
        logger = MLflowLogger(uri, run_id)
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "params.yaml").write_text(yaml.safe_dump(dict(config), sort_keys=False), encoding="utf-8")
            (Path(tmp) / "vocab_fingerprint.json").write_text(json.dumps(dict(vocab), indent=2), encoding="utf-8")
            logger.log_artifact(Path(tmp) / "params.yaml", "config")
            logger.log_artifact(Path(tmp) / "vocab_fingerprint.json", "config")
    except BaseException:
        c.set_terminated(run_id, "FAILED")
        raise
    return run_id


def reopen_run(uri: str, run_id: str) -> None:
    """Mark a resumed run RUNNING again (it was left KILLED, FAILED or, after a hard kill, RUNNING)."""
    c = client(uri)
    close_stale_runs(uri, c.get_run(run_id).info.experiment_id)
    for key, value in owner_tags().items():
        c.set_tag(run_id, key, value)
    c.update_run(run_id, status="RUNNING")


def owner_tags() -> dict[str, str]:
    """Which process runs a training job (`deca.host`, `deca.pid`): how a later start knows it has gone."""
    return {"deca.host": socket.gethostname(), "deca.pid": str(os.getpid())}


def close_stale_runs(uri: str, experiment_id: str) -> list[str]:
    """Mark KILLED the RUNNING runs of the experiment whose training process, on this host, is gone (a hard
    kill leaves its run RUNNING for ever); runs of other hosts or without an owner are left alone. Returns
    their ids."""
    c, closed = client(uri), []
    for run in c.search_runs([experiment_id], "attributes.status = 'RUNNING'", max_results=1000):
        tags = run.data.tags
        if tags.get("deca.host") != socket.gethostname() or not tags.get("deca.pid", "").isdigit():
            continue
        if not _alive(int(tags["deca.pid"])):
            c.set_tag(run.info.run_id, "deca.closed", f"its process {tags['deca.pid']} had gone")
            c.set_terminated(run.info.run_id, "KILLED")
            closed.append(run.info.run_id)
    return closed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


def end_run(uri: str, run_id: str, status: str = "FINISHED") -> None:
    """Mark the run FINISHED / FAILED / KILLED."""
    client(uri).set_terminated(run_id, status)


class PhaseLog:
    """Records the schedule phase into a run once per change: metric `phase`, tags `phase` and `phase.<i>`."""

    def __init__(self, logger: MetricLogger | None):
        self.logger = logger
        self.current: int | None = None

    def record(self, index: int, name: str, step: int) -> None:
        if self.logger is None or index == self.current:
            return
        self.current = index
        self.logger.log_metrics({"phase": index}, step)
        self.logger.set_tag("phase", name)
        self.logger.set_tag(f"phase.{index}", f"{name} from iteration {step}")

    def assume(self, index: int | None) -> None:
        """On resume: the phase already recorded before the checkpoint (not logged again)."""
        self.current = index


def log_lineage(uri: str, run_id: str, record: Mapping[str, Any], processed_dir: str | Path) -> None:
    """Log a run's lineage (deca/lineage.py): ``lineage.*`` tags, the record as ``lineage/lineage.json``, and
    each processed task/split it reads as an MLflow dataset input (name ``<task>/<split>``, its digest,
    context ``training`` or ``validation``)."""
    from mlflow.entities import Dataset, DatasetInput, InputTag, RunTag

    from deca.lineage import tags
    from deca.schema import split_dir

    c = client(uri)
    c.log_batch(run_id, tags=[RunTag(k, v[:PARAM_LIMIT]) for k, v in sorted(tags(record).items())])
    inputs = []
    for name, sha in sorted((record.get("data") or {}).items()):
        task, split = name.rsplit("/", 1)
        source = json.dumps({"uri": Path(split_dir(processed_dir, task, split)).resolve().as_uri()})
        dataset = Dataset(name, (sha or "missing")[:36], "local", source)  # MLflow keeps 36 characters of digest
        context = "training" if split == "train" else split
        inputs.append(DatasetInput(dataset, tags=[InputTag("mlflow.data.context", context)]))
    if inputs:
        c.log_inputs(run_id, datasets=inputs)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lineage.json"
        path.write_text(json.dumps(dict(record), indent=2, sort_keys=True), encoding="utf-8")
        c.log_artifact(run_id, str(path), "lineage")


def record_lineage(uri: str, run_id: str, params, tasks: list[str], project: str | Path,
                   vocab: Mapping[str, Any]) -> dict[str, Any]:
    """Collect the lineage of a new run with resolved `params` (deca.lineage.collect; the fingerprints of its
    pre-trained vector sources opened here) and log it (`log_lineage`); returns the record."""
    from deca.lineage import collect
    from mqan.vectors import open_source

    sources = {"word_vectors": params.model.word_vectors, "char_vectors": params.model.char_vectors}
    vectors = {key: open_source(spec).fingerprint for key, spec in sources.items() if spec}
    record = collect(project, dataclasses.asdict(params), tasks, vocab["sha256"], vectors)
    log_lineage(uri, run_id, record, params.data.processed_dir)
    return record


def logged_checkpoint(uri: str, run_id: str, dst: str | Path, model_id: str | None = None) -> Path | None:
    """The checkpoint (``artifacts/model.pt``, infer/mlflow_model.py) of the model `model_id`, else of the newest
    model the run logged, downloaded into `dst`; None when the run logged none."""
    import mlflow

    c = client(uri)
    if model_id is None:
        run = c.get_run(run_id)
        models = c.search_logged_models(experiment_ids=[run.info.experiment_id],
                                        filter_string=f"source_run_id = '{run_id}'")
        if not models:
            return None
        model_id = max(models, key=lambda m: m.creation_timestamp).model_id
    location = c.get_logged_model(model_id).artifact_location.rstrip("/")
    return Path(mlflow.artifacts.download_artifacts(artifact_uri=f"{location}/artifacts/model.pt",
                                                    dst_path=str(dst), tracking_uri=uri))
