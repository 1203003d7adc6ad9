"""Ray Train's local mode (train.num_workers: 0, train/local_mode.py): the checks and the run folder's register
(fast), then real trainings on the miniature data (slow).

The slow runs, in one module-scoped fixture:
L   local mode, 8 iterations: no Ray instance is started; the run folder holds what a worker run's holds.
W   1 Ray worker (a local Ray instance started by `fit`, as `deca train` does), the same params: its final
    weights equal L's exactly (measured on one machine: equal to the bit; the worker is another process,
    with the same thread count, train.cpus_per_worker).
R   local mode stopped at 4, then resumed on 1 Ray worker to 8 (`--resume --set train.num_workers=1`):
    Ray Train reads the register local mode wrote, and the weights equal L's.
Then `deca train --workers 0` in a child process, interrupted (SIGINT, as Ctrl-C) after its first checkpoint:
exit 130, the MLflow run KILLED, the checkpoint kept, and `deca train --resume` continues from it.
"""
from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from deca.checks import check_params, load_params
from deca.cli import main
from deca.config import ModelConfig, Params, TrainConfig
from deca.errors import ConfigError
from train.local_mode import LocalSink, latest_checkpoint, persist, read_snapshot


def checkpoint_dir(tmp_path, iteration: int):
    d = tmp_path / f"tmp-{iteration}"
    d.mkdir()
    (d / "state.pt").write_text(f"state {iteration}")
    return d


def test_reported_checkpoints_are_kept_registered_and_pruned_as_ray_train_does(tmp_path):
    from ray.train.v2._internal.execution.checkpoint.checkpoint_manager import _CheckpointManagerState

    run = tmp_path / "checkpoints" / "r"
    run.mkdir(parents=True)
    assert latest_checkpoint(run) is None
    for it in (4, 8, 12):
        kept = persist(checkpoint_dir(tmp_path, it), {"iteration": it}, f"checkpoint_{it:08d}", run, keep=2)
        assert (kept / "state.pt").read_text() == f"state {it}"
    assert sorted(p.name for p in run.iterdir()) == ["checkpoint_00000008", "checkpoint_00000012",
                                                     "checkpoint_manager_snapshot.json"]
    snapshot = read_snapshot(run)
    assert [r["checkpoint_dir_name"] for r in snapshot["checkpoint_results"]] == ["checkpoint_00000008",
                                                                                  "checkpoint_00000012"]
    assert snapshot["checkpoint_report_indices"] == [1, 2] and snapshot["current_report_index"] == 3
    assert latest_checkpoint(run) == run / "checkpoint_00000012"
    # Ray Train's own checkpoint manager reads it (a run started locally resumes on workers)
    state = _CheckpointManagerState.parse_raw((run / "checkpoint_manager_snapshot.json").read_text())
    assert state.latest_checkpoint_result.metrics == {"iteration": 12}
    # the same iteration again (a resumed run that ends where it stopped): replaced, registered once
    persist(checkpoint_dir(tmp_path, 99), {"iteration": 12}, "checkpoint_00000012", run, keep=2)
    assert (run / "checkpoint_00000012" / "state.pt").read_text() == "state 99"
    assert [r["checkpoint_dir_name"] for r in read_snapshot(run)["checkpoint_results"]] == [
        "checkpoint_00000008", "checkpoint_00000012"]


def test_the_progress_messages_stay_in_the_process():
    from train.progress import Progress, ProgressBar

    sink = LocalSink()
    Progress(sink).push(force=True, iteration=3, loss=lambda: 1.5)
    bar = ProgressBar(sink, total=10, bar=False)
    bar.update(bar._drain())
    assert bar.iteration == 3 and bar.shown["loss"] == "1.500" and sink.drain() == []


def test_a_negative_worker_count_is_one_line_naming_the_params_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  iterations: 5\n  num_workers: -1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_params(params)
    assert str(err.value) == f"{params}:3: train.num_workers = -1: must be >= 0"
    assert main(["train", "--params", str(params), "--set", "train.num_workers=1", "--workers", "-2"]) == 1
    assert capsys.readouterr().err == "error: --workers -2: train.num_workers = -2: must be >= 0\n"
    assert not (tmp_path / "checkpoints").exists()


def test_what_local_mode_cannot_do_is_refused_with_it_naming_each_line(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  num_workers: 0\n  placement_strategy: SPREAD\n  max_failures: 2\n",
                      encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_params(params)
    lines = str(err.value).splitlines()
    assert lines[1].startswith(f"  {params}:4: train.max_failures = 2: train.num_workers = 0 (Ray Train's local "
                               "mode: training in this process) cannot restart after a failure; set "
                               "train.max_failures: 0")
    assert lines[2].startswith(f"  {params}:3: train.placement_strategy = 'SPREAD': train.num_workers = 0")
    assert load_params(params, {"train.num_workers": 2}).train.max_failures == 2  # with workers: as before
    ok = load_params(params, {"train.max_failures": 0, "train.placement_strategy": "PACK"})
    check_params(ok)


def test_local_mode_on_a_ray_cluster_is_refused(monkeypatch):
    from train.local_mode import check_environment

    monkeypatch.setenv("RAY_ADDRESS", "ray://head:10001")
    with pytest.raises(ConfigError, match=r"not on the cluster RAY_ADDRESS=ray://head:10001 names; set "
                                          r"train.num_workers >= 1"):
        check_environment()
    monkeypatch.delenv("RAY_ADDRESS")
    check_environment()


def test_params_yaml_trains_the_main_job_in_local_mode():
    from tests.conftest import ROOT

    train = load_params(ROOT / "params.yaml").train
    assert (train.num_workers, train.max_failures) == (0, 0)


# ---- real trainings (slow) ----

ITERATIONS = 8


@pytest.fixture(scope="module")
def trained(mini_data, tmp_path_factory):
    import ray

    from train.driver import fit

    processed, vocab, _ = mini_data
    root = tmp_path_factory.mktemp("local-mode")
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    params.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1,
                               dropout=0.1, embedding_dim=16, max_generative_vocab=200, max_answer_length=12)
    params.train = TrainConfig(tasks=["sst"], iterations=ITERATIONS, token_budget=800, lr=1e-2, warmup=2,
                               val_every=4, save_every=4, log_every=1, val_batch_size=8, num_workers=0,
                               max_failures=0, seed=7, ema_decay=0.9, storage_dir=str(root / "checkpoints"),
                               experiment="local")
    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{root}/mlflow.db")
    mp.delenv("RAY_ADDRESS", raising=False)
    assert not ray.is_initialized()
    seen = []
    try:
        out = {"L": fit(params, run_name="local", progress=False, project=root,
                        hooks=[lambda recipe: seen.append(ray.is_initialized())])}
        out["W"] = fit(dataclasses.replace(params, train=dataclasses.replace(params.train, num_workers=1)),
                       run_name="worker", progress=False, project=root)
        short = dataclasses.replace(params, train=dataclasses.replace(params.train, iterations=4))
        out["R1"] = fit(short, run_name="resumed", progress=False, project=root)
        out["R1 snapshot"] = read_snapshot(out["R1"].run_dir)
        out["R"] = fit(short, run_name="resumed", resume=True, progress=False, project=root,
                       overrides={"train.iterations": ITERATIONS, "train.num_workers": 1})
    finally:
        mp.undo()
    out["ray during L"] = seen
    out["params"], out["root"] = params, root
    return out


def final_state(outcome):
    return torch.load(os.path.join(outcome.checkpoint, "state.pt"), map_location="cpu", weights_only=False)


def same_weights(a, b) -> list[str]:
    wa, wb = final_state(a)["model"], final_state(b)["model"]
    assert wa.keys() == wb.keys()
    return [k for k in wa if not torch.equal(wa[k], wb[k])]


@pytest.mark.slow
def test_local_mode_trains_in_this_process_without_ray_and_leaves_a_worker_runs_folder(trained):
    from deca.metric_logging import client

    local, worker = trained["L"], trained["W"]
    assert trained["ray during L"] and not any(trained["ray during L"])  # no Ray instance, every step
    assert local.metrics["iteration"] == ITERATIONS and local.checkpoint == str(local.run_dir / "checkpoint_00000008")
    layout = {p.name for p in local.run_dir.iterdir()}
    assert layout == {p.name for p in worker.run_dir.iterdir()} - {".validate_storage_marker"}
    assert layout == {"best", "checkpoint_00000004", "checkpoint_00000008", "checkpoint_manager_snapshot.json",
                      "deca_run.json"}
    snapshots = [json.loads((o.run_dir / "checkpoint_manager_snapshot.json").read_text()) for o in (local, worker)]
    assert snapshots[0] == snapshots[1]  # the register Ray Train writes, field for field
    record = json.loads((local.run_dir / "deca_run.json").read_text())
    assert record["finished"] and record["params"]["train"]["num_workers"] == 0
    run = client(local.tracking_uri).get_run(local.mlflow_run_id)
    assert run.info.status == "FINISHED" and run.data.params["train.num_workers"] == "0"
    assert run.data.tags["workers"] == "1"  # the recipe's world: one training process
    assert run.data.tags["worker_nodes"].endswith("/local") and "validation/sst/headline" in run.data.metrics
    artifacts = {a.path for a in client(local.tracking_uri).list_artifacts(local.mlflow_run_id)}
    assert {"best_checkpoint", "plots"} <= artifacts  # the best model and the plots


@pytest.mark.slow
def test_local_mode_gives_the_one_worker_model(trained):
    assert not same_weights(trained["L"], trained["W"])
    average = [final_state(trained[k])["average"]["average"] for k in ("L", "W")]
    assert all(torch.equal(x, y) for x, y in zip(*average))


@pytest.mark.slow
def test_a_local_run_resumes_on_a_ray_worker_from_its_register(trained):
    first = trained["R1 snapshot"]
    assert first["latest_checkpoint_result"]["checkpoint_dir_name"] == "checkpoint_00000004"
    resumed = trained["R"]
    assert resumed.metrics["iteration"] == ITERATIONS and (resumed.run_dir / ".validate_storage_marker").exists()
    assert not same_weights(resumed, trained["L"])


@pytest.mark.slow
def test_ctrl_c_stops_a_local_run_that_then_resumes(trained):
    import yaml

    from deca.metric_logging import client
    from tests.conftest import ROOT

    root, params = trained["root"], trained["params"]
    longer = dataclasses.replace(params.train, iterations=60, val_every=0, log_every=5)
    path = root / "ctrl-c.yaml"
    path.write_text(yaml.safe_dump(dataclasses.asdict(dataclasses.replace(params, train=longer))), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{root}/mlflow.db"}
    env.pop("RAY_ADDRESS", None)
    argv = [sys.executable, "-m", "deca.cli", "train", "--params", str(path), "--run-name", "ctrl-c", "--no-progress"]
    run_dir = root / "checkpoints" / "ctrl-c"
    proc = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 300
    while proc.poll() is None and not read_snapshot(run_dir)["checkpoint_results"] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out[-3000:]
    record = json.loads((run_dir / "deca_run.json").read_text())
    stopped_at = read_snapshot(run_dir)["latest_checkpoint_result"]["metrics"]["iteration"]
    assert not record.get("finished") and 4 <= stopped_at < 60
    c = client(env["MLFLOW_TRACKING_URI"])
    assert c.get_run(record["mlflow_run_id"]).info.status == "KILLED"
    resumed = subprocess.run([*argv[:-3], "--resume", "ctrl-c", "--no-progress"], cwd=root, env=env,
                             capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-3000:]
    run = c.get_run(record["mlflow_run_id"])
    assert run.info.status == "FINISHED" and int(run.data.tags["resumed_from_iteration"]) == stopped_at
    assert read_snapshot(run_dir)["latest_checkpoint_result"]["metrics"]["iteration"] == 60
