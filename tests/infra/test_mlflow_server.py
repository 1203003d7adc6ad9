"""`deca train`, `deca evaluate` and `deca compare` against a real MLflow tracking server (slow).

The server is infra/mlflow/server.sh on a free loopback port (SQLite backend, artifacts proxied by the
server: clients hold only the URI). Every command gets the server by MLFLOW_TRACKING_URI alone and runs as
the `deca` console script in a scratch directory, which must stay free of any local MLflow store. The run
registers its model (train.register_model): promoted with `deca register --alias`, it answers through the
server as `deca predict --model models:/<name>@<alias>` and as `mlflow.pyfunc.load_model`. A second
test points MLFLOW_TRACKING_URI at a closed port: `deca train` and `deca compare` must stop within seconds
with a message naming the URI and the fix, leaving no run behind.
"""
from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.infra.conftest import TASKS, write_params
from tests.infra.processes import VENV_BIN, child_env, free_port

pytestmark = pytest.mark.slow

ITERATIONS = 6
REGISTERED = "decanlp-served"  # train.register_model of the run
LOCAL_MODE = {"num_workers": 0, "max_failures": 0}  # Ray Train's local mode: the server is tested, not workers


def deca(*args: str, cwd, env, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "deca"), *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def ok(proc: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert proc.returncode == 0, f"{proc.args}\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_train_evaluate_compare_and_artifacts_through_the_server(mlflow_server, infra_data, tmp_path):
    import mlflow.artifacts
    from mlflow import MlflowClient

    from mqan.checkpoint import load_model

    params = write_params(tmp_path / "params.yaml", infra_data, tmp_path / "checkpoints", "served",
                          iterations=ITERATIONS, val_every=3, save_every=3, cpus_per_worker=1.0,
                          register_model=REGISTERED, **LOCAL_MODE)
    env = child_env(MLFLOW_TRACKING_URI=mlflow_server.url, DECA_MODEL_CACHE=str(tmp_path / "model-cache"),
                    MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR="false")
    trained = ok(deca("train", "--params", str(params), "--run-name", "served", "--no-progress", cwd=tmp_path,
                      env=env))
    assert f"registered {REGISTERED} version 1: models:/{REGISTERED}/1" in trained.stdout  # train.register_model
    run_dir = tmp_path / "checkpoints" / "served"
    record = json.loads((run_dir / "deca_run.json").read_text())
    assert record["tracking_uri"] == mlflow_server.url and record["finished"]
    run_id = record["mlflow_run_id"]

    evaluated = ok(deca("evaluate", "--run", str(run_dir), "--params", str(params), "--no-progress",
                        cwd=tmp_path, env=env))
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert "decaScore" in evaluated.stdout
    table = json.loads(ok(deca("compare", "--mlflow", "--params", str(params), "--json", cwd=tmp_path,
                               env=env)).stdout)
    (row,) = [r for r in table["rows"] if r["meta"]["run_id"] == run_id]
    assert row["label"] == "served" and row["meta"]["metrics"] == "evaluate"  # deca evaluate's values won
    assert set(row["scores"]) == set(TASKS)
    assert row["decascore"] == pytest.approx(metrics["decascore"], abs=1e-6)

    client = MlflowClient(tracking_uri=mlflow_server.url)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.info.artifact_uri.startswith("mlflow-artifacts:")
    assert run.data.metrics["validation/decascore"] == pytest.approx(metrics["decascore"], abs=1e-6)
    # the artifacts went through the server into its store, and come back from it byte for byte
    best = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="best_checkpoint/model.pt",
                                               dst_path=str(tmp_path / "download"), tracking_uri=mlflow_server.url)
    best = Path(best)
    assert sha256(best) == sha256(run_dir / "best" / "model.pt")
    assert list((mlflow_server.store / "artifacts").rglob("model.pt"))
    model, _, extra = load_model(best)
    assert extra["iteration"] in (3, ITERATIONS) and sum(p.numel() for p in model.parameters()) > 0
    assert run.data.tags["evaluated.validation"] == str(extra["iteration"])  # evaluate scored that model
    plots = {a.path for a in client.list_artifacts(run_id, "plots")}
    assert {"plots/loss.png", "plots/validation.png"} <= plots
    png = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="plots/loss.png",
                                                   dst_path=str(tmp_path / "download"),
                                                   tracking_uri=mlflow_server.url))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    registry_through_the_server(mlflow_server.url, run_dir, run_id, params, env, tmp_path)
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "mlflow.db").exists()  # nothing local


def registry_through_the_server(url: str, run_dir: Path, run_id: str, params: Path, env, tmp_path: Path) -> None:
    """The version `deca train` registered (train.register_model) is the run's logged MLflow model, stored by the
    server; an alias promotes it; `deca predict --model models:/<name>@<alias>` and mlflow.pyfunc.load_model
    through the server answer what `deca predict --run` answers."""
    import mlflow.pyfunc
    import pandas as pd
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=url)
    version = client.get_model_version(REGISTERED, "1")
    assert version.run_id == run_id and version.tags["deca.run"] == "served"
    promoted = ok(deca("register", "--name", REGISTERED, "--version", "1", "--alias", "champion", cwd=tmp_path,
                       env=env))
    assert f"alias champion -> {REGISTERED} version 1: models:/{REGISTERED}@champion" in promoted.stdout
    ask = ["--context", "a fine film , warmly acted .", "--question", "Is this review negative or positive?"]
    by_run = json.loads(ok(deca("predict", "--run", str(run_dir), *ask, "--device", "cpu", cwd=tmp_path,
                                env=env)).stdout)
    by_alias = json.loads(ok(deca("predict", "--model", f"models:/{REGISTERED}@champion", *ask, "--device", "cpu",
                                  "--params", str(params), cwd=tmp_path, env=env)).stdout)
    assert by_alias == by_run
    assert list((tmp_path / "model-cache").glob(f"{REGISTERED}-1-*/artifacts/model.pt"))
    from infer.model_uri import tracking

    with tracking(url):  # the fluent API (and so the registry) at the server, for this call only
        model = mlflow.pyfunc.load_model(f"models:/{REGISTERED}@champion", model_config={"device": "cpu"})
    assert model.metadata.run_id == run_id
    got = model.predict(pd.DataFrame([{"id": "0", "context": ask[1], "question": ask[3]}]))
    assert got.to_dict("records") == [by_run]


def test_a_server_that_is_down_fails_fast_with_the_uri_and_the_fix(infra_data, tmp_path):
    params = write_params(tmp_path / "params.yaml", infra_data, tmp_path / "checkpoints", "down", iterations=2,
                          **LOCAL_MODE)
    uri = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    env = child_env(MLFLOW_TRACKING_URI=uri)
    for args in (["train", "--params", str(params), "--run-name", "nowhere", "--no-progress"],
                 ["compare", "--mlflow", "--params", str(params)]):
        start = time.monotonic()
        proc = deca(*args, cwd=tmp_path, env=env, timeout=120)
        elapsed = time.monotonic() - start
        assert proc.returncode == 1, (args, proc.stdout, proc.stderr)
        assert f"error: MLflow tracking server {uri} is not reachable (Connection refused)" in proc.stderr
        assert "fix: start it (e.g. `bash infra/mlflow/server.sh`)" in proc.stderr
        assert elapsed < 30, (args, elapsed)  # MLflow's own retries would take minutes
    assert not (tmp_path / "checkpoints" / "nowhere").exists()  # no half-created run
