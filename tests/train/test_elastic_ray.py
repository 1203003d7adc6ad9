"""Elastic training on a real two-node Ray cluster (slow; loopback nodes as tests/infra/test_ray_cluster.py).

Three runs of the same params (dropout 0, so that the result is exact up to the float order of the
reductions; see train/workers.py) must agree in their per-step training loss and final weights:
  one      1 worker (Ray Train's local mode: rank 0 of 1, in this process)
  two      2 workers, one per node (train.num_workers: 2)
  elastic  train.num_workers: [1, 2]: starts on 2 workers; after the checkpoint of iteration 4 the node of
           one worker is killed, and Ray Train restarts the group on the one node left (1 worker) from that
           checkpoint; after the checkpoint of iteration 8 a new node joins and Ray Train's resize monitor
           grows the group back to 2 workers, from that checkpoint, to the end.
A run whose `min` workers do not fit the cluster is refused in one line, before it waits for them.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import pytest
import torch

from deca.config import ModelConfig, Params, TrainConfig
from deca.errors import ConfigError
from eval.curves import history
from tests.infra.processes import sweep, wait_for
from tests.infra.test_ray_cluster import FIRST, HEAD, SECOND, LocalCluster

pytestmark = [pytest.mark.slow, pytest.mark.first]

ITERATIONS, SAVE_EVERY = 12, 4
SHRINK_AT, GROW_AT = 5, 9  # right after the checkpoints of iterations 4 and 8
LOSS_RTOL, WEIGHT_ATOL = 1e-4, 1e-4
# Ray Train may notice the dead worker before the GCS declares its node dead: its first restart then asks for
# 2 workers and waits for them until this timeout (default 60 s) before it restarts on the 1 there is room for.
FAST_RESTART = {"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "10"}


@pytest.fixture
def cluster(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="deca-ray-"))  # short: Ray's socket paths must stay under 107 bytes
    nodes = LocalCluster(root, tmp_path / "logs", env=FAST_RESTART)
    try:
        yield nodes
    finally:
        nodes.stop()
        stray = sweep(str(root)) + sweep(str(tmp_path))
        shutil.rmtree(root, ignore_errors=True)
        assert not stray, f"processes left behind (killed): {stray}"


def base_params(mini_data, root: Path) -> Params:
    processed, vocab, _ = mini_data
    p = Params()
    p.data = dataclasses.replace(p.data, processed_dir=str(processed), vocab_path=str(vocab))
    p.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1, dropout=0.0,
                          embedding_dim=16, word_vectors=None, max_generative_vocab=200, max_answer_length=8)
    p.train = TrainConfig(tasks=["sst", "schema"], iterations=ITERATIONS, token_budget=800, lr=1e-2, warmup=4,
                          val_every=0, save_every=SAVE_EVERY, log_every=1, max_val_examples=4, val_batch_size=8,
                          seed=7, cpus_per_worker=1.0, max_failures=1, resize_every_s=1.0,
                          storage_dir=str(root / "checkpoints"), experiment="elastic")
    return p


def train(params: Params, root: Path, name: str, hooks=(), **changes):
    """fit() of `params` with `changes`, with a hook that logs the workers of every step to <root>/<name>.workers;
    (outcome, wall seconds)."""
    from tests.train.hooks import LogWorld, by_value
    from train.driver import fit

    by_value()
    p = dataclasses.replace(params, train=dataclasses.replace(params.train, **changes))
    start = time.monotonic()
    outcome = fit(p, run_name=name, progress=False, project=root, hooks=[*hooks, LogWorld(root / f"{name}.workers")])
    return outcome, time.monotonic() - start


def workers(root: Path, name: str) -> list[int]:
    """The workers that trained each step (a replayed step: the last group that trained it)."""
    steps = dict(map(int, line.split()) for line in (root / f"{name}.workers").read_text().splitlines())
    return [steps[i] for i in range(1, ITERATIONS + 1)]


def curve(outcome) -> list[float]:
    points = history(outcome.tracking_uri, outcome.mlflow_run_id, "train/loss")["train/loss"]
    return [v for _, v in sorted(dict(points).items())]  # a replayed step keeps its last value


def weights(outcome) -> dict[str, torch.Tensor]:
    state = torch.load(os.path.join(outcome.checkpoint, "state.pt"), map_location="cpu", weights_only=True)
    assert state["iteration"] == ITERATIONS
    return state["model"]


def on_marker(marker: Path, action, errors: list) -> threading.Thread:
    """Run `action` once `marker` exists (a worker paused there: tests/train/hooks.PauseOnce), and Ray Train's
    controller has registered the checkpoint reported just before (it does when it polls the workers, every
    RAY_TRAIN_HEALTH_CHECK_INTERVAL_S, 2 s)."""
    def watch():
        try:
            wait_for(marker.exists, 240, f"{marker.name}", every=0.2)
            time.sleep(float(os.environ.get("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", 2.0)) + 1.0)
            action()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_one_two_and_two_one_two_workers_train_the_same_model(cluster, mini_data, tmp_path, monkeypatch,
                                                                elastic_record):
    from deca.metric_logging import client
    from tests.train.hooks import PauseOnce

    root = tmp_path
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr("train.driver.register_model", lambda *args: False)  # not what this test is about
    params = base_params(mini_data, root)
    cluster.start_head()
    cluster.add_node(FIRST)
    one, one_s = train(params, root, "one", num_workers=0, max_failures=0)  # while the nodes start
    wait_for(lambda: set(cluster.alive()) == {HEAD, FIRST}, 180, "the two nodes", list(cluster.daemons.values()))
    monkeypatch.setenv("RAY_ADDRESS", f"{HEAD}:{cluster.gcs_port}")
    two, two_s = train(params, root, "two", num_workers=2)

    with pytest.raises(ConfigError) as refused:  # a run whose min workers the cluster cannot hold
        train(params, root, "too-many", num_workers=[3, 4])
    assert str(refused.value) == ("train.num_workers=[3, 4] needs at least 3 workers: it needs 3 CPU but Ray has 2; "
                                  "lower train.num_workers or train.cpus_per_worker (fractions such as 0.5 are "
                                  "allowed)")

    markers, errors = root / "checkpoints" / "elastic", []
    shrink, grow = markers / ".shrink", markers / ".grow"
    watchers = [on_marker(shrink, lambda: cluster.kill_node(FIRST), errors),
                on_marker(grow, lambda: cluster.add_node(SECOND), errors)]
    elastic, elastic_s = train(params, root, "elastic", num_workers=[1, 2],
                               hooks=[PauseOnce(SHRINK_AT, 2, shrink), PauseOnce(GROW_AT, 1, grow)])
    for watcher in watchers:
        watcher.join(5)
    assert not errors, errors
    assert "of 2 paused" in shrink.read_text() and "of 1 paused" in grow.read_text()

    mlflow = client(elastic.tracking_uri)
    restarts = [(m.step, m.value) for m in mlflow.get_metric_history(elastic.mlflow_run_id, "resumed_from_iteration")]
    assert restarts == [(4, 4), (8, 8)], restarts  # shrunk from the checkpoint of 4, grown from that of 8
    run = mlflow.get_run(elastic.mlflow_run_id)
    assert run.data.params["train.num_workers"] == "[1, 2]"
    assert run.data.tags["workers"] == "2" and len(run.data.tags["worker_nodes"].split(",")) == 2  # the last group
    groups = {"one": workers(root, "one"), "two": workers(root, "two"), "elastic": workers(root, "elastic")}
    assert groups == {"one": [1] * 12, "two": [2] * 12, "elastic": [2] * 4 + [1] * 4 + [2] * 4}, groups

    curves = {"one": curve(one), "two": curve(two), "elastic": curve(elastic)}
    assert all(len(c) == ITERATIONS for c in curves.values()), curves
    reference, differences = weights(one), {}
    for name, outcome in (("two", two), ("elastic", elastic)):
        assert torch.allclose(torch.tensor(curves[name]), torch.tensor(curves["one"]), rtol=LOSS_RTOL), curves
        mine = weights(outcome)
        assert mine.keys() == reference.keys()
        for key, value in mine.items():
            assert torch.allclose(value.double(), reference[key].double(), rtol=1e-3, atol=WEIGHT_ATOL), (name, key)
        differences[name] = {"loss": max(abs(a - b) for a, b in zip(curves[name], curves["one"])),
                             "weight": max(float((v.double() - reference[k].double()).abs().max()) for k, v in mine.items())}

    what = {"one": "1 worker (Ray Train's local mode)", "two": "2 workers, one per node",
            "elastic": f"train.num_workers [1, 2]: 2 workers; after the checkpoint of iteration {SHRINK_AT - 1} one "
                       f"node killed, restarted on the node left (1 worker); after the checkpoint of iteration "
                       f"{GROW_AT - 1} a new node, grown back to 2 workers"}
    labels = {"one": "1 worker", "two": "2 workers", "elastic": "2 → 1 → 2 workers"}
    elastic_record(
        {"tasks": params.train.tasks, "dimension": params.model.dimension, "dropout": params.model.dropout,
         "token_budget": params.train.token_budget, "iterations": ITERATIONS, "save_every": SAVE_EVERY,
         "loss_rtol": LOSS_RTOL, "cluster": "a Ray cluster of two loopback nodes with one CPU each "
                                            "(tests/infra/test_ray_cluster.py's LocalCluster)"},
        {"runs": {labels[n]: {"what": what[n], "losses": curves[n], "workers": groups[n], "seconds": round(t, 1)}
                  for n, t in (("one", one_s), ("two", two_s), ("elastic", elastic_s))},
         "max_difference": {labels[n]: d for n, d in differences.items()}})
