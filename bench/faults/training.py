"""Training failures and what they leave behind (issue 34): `deca train` run in this process on tiny
processed data, with a local MLflow store, up to where Ray would start (train.driver.start_ray is replaced:
no Ray here). A truncated shard, too many workers for the CPUs, a worker whose disk fills, a run left
RUNNING by a killed training: each must end in one line, leave no run folder that counts as the latest run,
keep the checkpoints already written, and leave no MLflow run RUNNING. Under `setsid` (the exit status) is
a slow test."""
from __future__ import annotations

import contextlib
import errno
import socket
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from bench.faults.case import Case, environment, must, patched
from bench.faults.tools import ENOSPC, processed, refused

TRAIN, LEFT = "issue 34: training fails with tracebacks", "issue 34: leftovers"
RUN = "first"


def train_argv(tmp: Path, *more: str) -> list[str]:
    """`deca train` on tiny SST data in `tmp` (run RUN under tmp/checkpoints, trained char n-grams only), on a Ray
    worker with one restart (the cases simulate what Ray Train does with workers; params.yaml trains locally)."""
    data = processed(tmp)
    sets = {"data.processed_dir": data, "data.vocab_path": tmp / "vocab.txt", "train.tasks": "[sst]",
            "train.storage_dir": tmp / "checkpoints", "model.word_vectors": "null", "train.num_workers": 1,
            "train.max_failures": 1, **dict(m.split("=", 1) for m in more)}
    return ["train", "--run-name", RUN, "--no-progress", *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


@contextlib.contextmanager
def no_ray(tmp: Path, started: list[str]) -> Iterator[str]:
    """No Ray inside the block (start_ray records that it was called), a Ray that has 2 CPUs for the resource
    check, MLflow in tmp/mlflow.db; yields the tracking URI."""
    import ray

    from train import driver

    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    with environment(MLFLOW_TRACKING_URI=uri), patched(driver, "start_ray", lambda params: started.append("ray")
                                                       or False), patched(ray, "cluster_resources",
                                                                          lambda: {"CPU": 2.0}):
        yield uri


def statuses(uri: str) -> dict[str, str]:
    """Run name -> status of every MLflow run in the store."""
    from mlflow import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    runs = c.search_runs([e.experiment_id for e in c.search_experiments()])
    return {r.info.run_name: r.info.status for r in runs}


def truncated_shard(tmp: Path) -> str:
    """A truncated Parquet shard of the training data: named with the fix before Ray starts."""
    argv, started = train_argv(tmp), []
    shard = sorted((tmp / "processed" / "sst" / "train").glob("*.parquet"))[0]
    shard.write_bytes(shard.read_bytes()[:-20])
    with no_ray(tmp, started):
        line = refused(argv, f"{shard}: not a readable Parquet shard", "rerun `deca prepare --tasks sst`")
    must(not started, "Ray was started before the shard was checked")
    return line


def too_many_workers(tmp: Path) -> str:
    """train.num_workers=64 on 2 CPUs: one line; no run folder left to count as the latest run; run FAILED."""
    argv, started = train_argv(tmp, "train.num_workers=64"), []
    with no_ray(tmp, started) as uri:
        line = refused(argv, "train.num_workers=64 needs 64 CPU but Ray has 2")
    run_dir = tmp / "checkpoints" / RUN
    must(not run_dir.exists(), f"the run folder {run_dir.name} was left ({sorted(p.name for p in run_dir.iterdir())})"
         if run_dir.exists() else "")
    must(statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED")
    return line


def disk_full_in_a_worker(tmp: Path) -> str:
    """A worker's write fails with ENOSPC after a first checkpoint (Ray Train's WorkerGroupError, simulated):
    "no space left" with the path, exit 1, the checkpoint kept, the MLflow run FAILED."""
    from ray.train.v2.api.exceptions import WorkerGroupError

    from train import driver

    run_dir = tmp / "checkpoints" / RUN
    target = run_dir / "checkpoint_000002" / "state.pt"

    def worker_fails(trainer, stop=None):
        (run_dir / "checkpoint_000001").mkdir(parents=True)
        (run_dir / "checkpoint_000001" / "state.pt").write_bytes(b"kept")
        (run_dir / "checkpoint_manager_snapshot.json").write_text(  # Ray Train registered it
            '{"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_000001"}]}', encoding="utf-8")
        raise WorkerGroupError("[Rank 0]\nTraceback ...", {0: OSError(errno.ENOSPC, ENOSPC, str(target))})

    argv, started = train_argv(tmp), []
    with no_ray(tmp, started) as uri, patched(driver, "_progress_sink", lambda: None), \
            patched(driver, "build_trainer", lambda *args: None), patched(driver, "fit_in_thread", worker_fails):
        line = refused(argv, f"no space left on the device of {target}", "deca train --resume first")
    must((run_dir / "checkpoint_000001" / "state.pt").is_file(), "the checkpoint written before was not kept")
    must(statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED")
    return line


def stale_run_closed(tmp: Path) -> str:
    """A run left RUNNING by a training whose process is gone (this host) is marked KILLED by the next start."""
    from mlflow import MlflowClient

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    argv, started = train_argv(tmp, "train.num_workers=64"), []
    with no_ray(tmp, started) as uri:
        c = MlflowClient(tracking_uri=uri)
        exp = c.create_experiment("decanlp", artifact_location=(tmp / "mlruns").as_uri())
        c.create_run(exp, run_name="killed", tags={"deca.host": socket.gethostname(), "deca.pid": str(dead.pid)})
        refused(argv, "train.num_workers=64")
    found = statuses(uri)
    must(found.get("killed") == "KILLED", f"the run left by the killed training is {found.get('killed')}")
    must(found.get(RUN) == "FAILED", f"the failed start's own run is {found.get(RUN)}, not FAILED")
    return f"the killed training's run: {found['killed']}; the failed start's run: {found[RUN]}"


def cases() -> list[Case]:
    """Training failures and leftovers."""
    g = "fault"
    return [
        Case(g, "deca train on a truncated Parquet shard: named with the fix before Ray starts", TRAIN,
             truncated_shard),
        Case(g, "deca train: disk full in a worker after a checkpoint (simulated ENOSPC)", TRAIN,
             disk_full_in_a_worker),
        Case(g, "deca train --set train.num_workers=64 on 2 CPUs: no run folder left, MLflow run FAILED", LEFT,
             too_many_workers),
        Case(g, "an MLflow run left RUNNING by a killed training is closed KILLED at the next start", LEFT,
             stale_run_closed),
        Case(g, "a training that fails under setsid exits 1, not 143", LEFT, test=(
            "tests/infra/test_processes.py::test_a_session_leader_that_guards_its_own_session_keeps_its_exit_status")),
    ]
