"""Fixtures of the scale-out tests: the miniature processed data, a params file for a small run, and a real
MLflow tracking server (infra/mlflow/server.sh: SQLite + proxied artifacts) on a free loopback port."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from deca.config import ModelConfig, Params, TrainConfig
from tests.conftest import ROOT
from tests.infra.processes import Daemon, answers, child_env, free_port, wait_for

TASKS = ["sst", "woz.en", "schema"]


@pytest.fixture(scope="session")
def infra_data(tmp_path_factory) -> tuple[Path, Path]:
    """(processed dir, vocabulary) of the bundled fixture corpora (tests/mini_data.py builds them)."""
    from tests.mini_data import build_processed

    processed, vocab, tasks = build_processed(tmp_path_factory.mktemp("infra-mini"))
    missing = [t for t in TASKS if t not in tasks]
    if missing:
        pytest.skip(f"fixture corpora missing for {missing}")
    return processed, vocab


def write_params(path: Path, data: tuple[Path, Path], storage: Path, experiment: str, **train) -> Path:
    """A params file for a miniature run of TASKS (a model of a few thousand weights), every path absolute;
    `train` overrides fields of the train section."""
    processed, vocab = data
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    params.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1,
                               dropout=0.1, embedding_dim=16, max_generative_vocab=200, max_answer_length=12)
    params.train = TrainConfig(tasks=TASKS, strategy="fully_joint", token_budget=800, lr=1e-2, warmup=4,
                               log_every=1, val_batch_size=8, max_val_examples=16, seed=7,
                               storage_dir=str(storage), experiment=experiment)
    params.train = dataclasses.replace(params.train, **train)
    out = path.parent / "eval"
    params.evaluate = dataclasses.replace(params.evaluate, tasks=TASKS, max_examples=16, device="cpu",
                                          predictions_dir=str(out / "predictions"),
                                          metrics_path=str(out / "metrics.json"), report_dir=str(out / "report"),
                                          plots_dir=str(out / "plots"))
    path.write_text(yaml.safe_dump(dataclasses.asdict(params), sort_keys=False), encoding="utf-8")
    return path


@dataclass
class TrackingServer:
    url: str
    store: Path  # mlflow.db and artifacts/
    daemon: Daemon


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    """`bash infra/mlflow/server.sh STORE PORT 127.0.0.1`, up until the session ends (stopped with its
    whole process group); it delivers webhooks to http on loopback (`deca serve --webhook`), and rereads its
    list of webhooks every second, not every minute."""
    store = tmp_path_factory.mktemp("mlflow-server")
    port = free_port()
    env = child_env(MLFLOW=str(ROOT / ".venv" / "bin" / "mlflow"), MLFLOW_WEBHOOK_ALLOWED_SCHEMES="http,https",
                    MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS="true", MLFLOW_WEBHOOK_CACHE_TTL="1")
    env.pop("MLFLOW_TRACKING_URI", None)
    daemon = Daemon("mlflow server", ["bash", str(ROOT / "infra" / "mlflow" / "server.sh"), str(store), str(port),
                                      "127.0.0.1"], store / "server.log", env=env)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(f"{url}/health"), 120,
                 "the MLflow server did not come up", [daemon])
        yield TrackingServer(url, store, daemon)
    finally:
        daemon.stop()
