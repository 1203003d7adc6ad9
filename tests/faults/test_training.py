"""Training failures and what they leave behind (issue 34): `deca train` run in this process on tiny processed
data, with a local MLflow store, up to where Ray would start (tools.no_ray). A truncated shard, too many workers
for the CPUs, a worker whose disk fills, a run left RUNNING by a killed training: each must end in one line,
leave no run folder that counts as the latest run, keep the checkpoints already written, and leave no MLflow
run RUNNING. The exit status under `setsid` is tests/infra/test_processes.py's (slow)."""
from __future__ import annotations

import errno
import socket
import subprocess
import sys

import pytest

from tests.faults.tools import ENOSPC, RUN, no_ray, patched, refused, statuses, train_argv

G, TRAIN, LEFT = "fault", "issue 34: training fails with tracebacks", "issue 34: leftovers"


@pytest.mark.fault(G, "deca train on a truncated Parquet shard: named with the fix before Ray starts", TRAIN)
def test_a_truncated_shard_is_named_before_ray_starts(tmp_path, observed):
    argv, started = train_argv(tmp_path), []
    shard = sorted((tmp_path / "processed" / "sst" / "train").glob("*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:-20])
    with no_ray(tmp_path, started):
        line = refused(argv, f"{shard}: not a readable Parquet shard", "rerun `deca prepare --tasks sst`")
    assert not started, "Ray was started before the shard was checked"
    observed(line)


@pytest.mark.fault(G, "deca train: disk full in a worker after a checkpoint (simulated ENOSPC)", TRAIN)
def test_a_full_disk_in_a_worker_keeps_the_checkpoint(tmp_path, observed):
    """A worker's write fails with ENOSPC after a first checkpoint (Ray Train's WorkerGroupError, simulated):
    "no space left" with the path, exit 1, the checkpoint kept, the MLflow run FAILED."""
    from ray.train.v2.api.exceptions import WorkerGroupError

    from train import driver

    run_dir = tmp_path / "checkpoints" / RUN
    target = run_dir / "checkpoint_000002" / "state.pt"

    def worker_fails(trainer, stop=None, watch=None):
        (run_dir / "checkpoint_000001").mkdir(parents=True)
        (run_dir / "checkpoint_000001" / "state.pt").write_bytes(b"kept")
        (run_dir / "checkpoint_manager_snapshot.json").write_text(  # Ray Train registered it
            '{"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_000001"}]}', encoding="utf-8")
        raise WorkerGroupError("[Rank 0]\nTraceback ...", {0: OSError(errno.ENOSPC, ENOSPC, str(target))})

    argv, started = train_argv(tmp_path), []
    with no_ray(tmp_path, started) as uri, patched(driver, "progress_sink", lambda: None), \
            patched(driver, "build_trainer", lambda *args: None), patched(driver, "fit_in_thread", worker_fails):
        line = refused(argv, f"no space left on the device of {target}", "deca train --resume first")
    assert (run_dir / "checkpoint_000001" / "state.pt").is_file(), "the checkpoint written before was not kept"
    assert statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED"
    observed(line)


@pytest.mark.fault(G, "deca train --set train.num_workers=64 on 2 CPUs: no run folder left, MLflow run FAILED", LEFT)
def test_too_many_workers_leave_no_run_folder(tmp_path, observed):
    argv, started = train_argv(tmp_path, "train.num_workers=64"), []
    with no_ray(tmp_path, started) as uri:
        line = refused(argv, "train.num_workers=64 needs 64 CPU but Ray has 2")
    run_dir = tmp_path / "checkpoints" / RUN
    assert not run_dir.exists(), f"the run folder {run_dir.name} was left ({sorted(p.name for p in run_dir.iterdir())})"
    assert statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED"
    observed(line)


@pytest.mark.fault(G, "an MLflow run left RUNNING by a killed training is closed KILLED at the next start", LEFT)
def test_a_stale_run_is_closed_killed(tmp_path, observed):
    """A run left RUNNING by a training whose process is gone (this host) is marked KILLED by the next start."""
    from mlflow import MlflowClient

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    argv, started = train_argv(tmp_path, "train.num_workers=64"), []
    with no_ray(tmp_path, started) as uri:
        c = MlflowClient(tracking_uri=uri)
        exp = c.create_experiment("decanlp", artifact_location=(tmp_path / "mlruns").as_uri())
        c.create_run(exp, run_name="killed", tags={"deca.host": socket.gethostname(), "deca.pid": str(dead.pid)})
        refused(argv, "train.num_workers=64")
    found = statuses(uri)
    assert found.get("killed") == "KILLED", f"the run left by the killed training is {found.get('killed')}"
    assert found.get(RUN) == "FAILED", f"the failed start's own run is {found.get(RUN)}, not FAILED"
    observed(f"the killed training's run: {found['killed']}; the failed start's run: {found[RUN]}")
