"""A real two-node Ray cluster on this machine (slow): a node killed in the middle of a training job.

The head (127.0.0.2) and a worker node (127.0.0.3) are separate `ray start --block` processes with one CPU
each, their own temp dirs and free ports. (Ray rewrites 127.0.0.1 to the machine's network address; the
rest of 127.0.0.0/8 is loopback too on Linux and is kept as given, so every node address stays on lo.)
`ray job submit` runs `infra/ray/train_job.sh train` (that is, `deca train`) on the head with
MLFLOW_TRACKING_URI naming the session's MLflow server; the params ask for two workers placed
STRICT_SPREAD (one per node) and checkpoints in a folder both nodes see.

Once Ray Train has registered the first checkpoint, the worker node is killed with SIGKILL (its `ray
start`, raylet and every worker process of its session: a machine that dies), and another node (127.0.0.4)
joins.
Ray Train's failure handling (train.max_failures) restarts the worker group from the latest checkpoint on
the head and the new node; the job must succeed with train.iterations iterations, and the MLflow run must
show the restart (resumed_from_iteration) and both placements (worker_nodes).
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
import torch

from tests.conftest import ROOT
from tests.infra.conftest import write_params
from tests.infra.processes import VENV_BIN, Daemon, child_env, free_ports, get_json, leftovers, sweep, wait_for
from train.resume import registered_checkpoints

pytestmark = pytest.mark.slow

HEAD, FIRST, SECOND = "127.0.0.2", "127.0.0.3", "127.0.0.4"
ITERATIONS, SAVE_EVERY = 36, 3
# Ray's GCS declares a node dead after health_check_failure_threshold failed checks, one every
# health_check_period_ms (defaults 5 and 3000 ms): a killed node is noticed in ~3 s instead of ~15 s. A node
# that is only slow still has health_check_timeout_ms (10 s) to answer each check.
FAST_FAILURE_DETECTION = {"RAY_health_check_period_ms": "1000", "RAY_health_check_failure_threshold": "3"}
NO_DRAIN = {"RAY_GRACEFUL_SHUTDOWN_DRAIN_TIMEOUT_S": "0"}  # SIGTERM would first drain the node for 30 s


class LocalCluster:
    """Ray nodes started with `ray start --block`, each in its own session and temp dir under `root`."""

    def __init__(self, root: Path, logs: Path, env: dict[str, str] | None = None):
        self.root, self.logs, self.env = root, logs, dict(env or {})  # `env`: more variables for every node
        self.gcs_port, self.dashboard_port = free_ports(2)
        self.dashboard = f"http://127.0.0.1:{self.dashboard_port}"
        self.daemons: dict[str, Daemon] = {}

    def _start(self, ip: str, head_args: list[str]) -> Daemon:
        names = ["node-manager-port", "object-manager-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
                 "runtime-env-agent-port", "metrics-export-port"] + (["ray-client-server-port"] if ip == HEAD else [])
        fresh = [port for port in free_ports(len(names) + 2) if port not in (self.gcs_port, self.dashboard_port)]
        ports = [f"--{name}={port}" for name, port in zip(names, fresh)]
        argv = [str(VENV_BIN / "ray"), "start", *head_args, f"--node-ip-address={ip}", "--num-cpus=1",
                f"--temp-dir={self.root / ip}", *ports, "--disable-usage-stats", "--block"]
        # every process of the node, workers included, inherits DECA_TEST_RAY_NODE: `leftovers` finds them by it
        env = child_env(**FAST_FAILURE_DETECTION, **NO_DRAIN, **self.env, DECA_TEST_RAY_NODE=str(self.root / ip))
        daemon = Daemon(f"ray node {ip}", argv, self.logs / f"ray-{ip}.log", env=env)
        self.daemons[ip] = daemon
        return daemon

    def start_head(self) -> Daemon:
        return self._start(HEAD, ["--head", f"--port={self.gcs_port}", "--include-dashboard=true",
                                  "--dashboard-host=127.0.0.1", f"--dashboard-port={self.dashboard_port}"])

    def add_node(self, ip: str) -> Daemon:
        return self._start(ip, [f"--address={HEAD}:{self.gcs_port}"])

    def alive(self) -> dict[str, str]:
        """{node IP: node id} of the nodes the head's state API lists as alive."""
        answer = get_json(f"{self.dashboard}/api/v0/nodes?limit=100&detail=false") or {}
        nodes = (answer.get("data") or {}).get("result", {}).get("result", [])
        return {n["node_ip"]: n["node_id"] for n in nodes if n.get("state") == "ALIVE"}

    def kill_node(self, ip: str) -> None:
        """The machine dies: SIGKILL every process of the node's session (Ray's workers included, which sit in
        process groups of their own), then anything else that carries the node's marker."""
        self.daemons[ip].kill()
        sweep(str(self.root / ip), grace=0)

    def stop(self) -> None:
        for daemon in self.daemons.values():  # all at once: each `ray start --block` stops its own processes
            daemon.terminate()
        for daemon in self.daemons.values():
            daemon.stop()


@pytest.fixture
def cluster(tmp_path):
    root = Path(tempfile.mkdtemp(prefix="deca-ray-"))  # short: Ray's socket paths must stay under 107 bytes
    nodes = LocalCluster(root, tmp_path / "logs")
    try:
        yield nodes
    finally:
        nodes.stop()
        stray = sweep(str(root)) + sweep(str(tmp_path))
        shutil.rmtree(root, ignore_errors=True)
        assert not stray, f"processes left behind (killed): {stray}"


def submit(cluster: LocalCluster, params: Path, run_name: str, tracking_uri: str, log: Path) -> tuple[Daemon, str]:
    """`ray job submit` of infra/ray/train_job.sh train, tailing the job's output into `log`."""
    job_id = f"deca-{run_name}-{os.getpid()}"
    runtime_env = json.dumps({"env_vars": {"MLFLOW_TRACKING_URI": tracking_uri}})
    argv = [str(VENV_BIN / "ray"), "job", "submit", f"--address={cluster.dashboard}", f"--submission-id={job_id}",
            f"--runtime-env-json={runtime_env}", "--", "bash", str(ROOT / "infra" / "ray" / "train_job.sh"), "train",
            "--params", str(params), "--run-name", run_name, "--no-progress"]
    return Daemon("ray job submit", argv, log, env=child_env()), job_id


def placement(client, run_id: str) -> dict[str, str]:
    """{node IP: node id} of the workers, from the run's worker_nodes tag ({} until rank 0 has set it)."""
    tag = client.get_run(run_id).data.tags.get("worker_nodes", "")
    return dict(entry.split("/", 1) for entry in tag.split(",") if entry)


def test_a_two_node_job_survives_a_killed_node(cluster, mlflow_server, infra_data, tmp_path):
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.url)
    cluster.start_head()
    cluster.add_node(FIRST)  # at once: `ray start --address` waits for the head's GCS
    first_nodes = wait_for(lambda: (lambda a: a if set(a) == {HEAD, FIRST} else None)(cluster.alive()), 180,
                           "the two nodes", list(cluster.daemons.values()))
    storage = tmp_path / "shared" / "checkpoints"  # one folder both nodes see (same machine)
    params = write_params(tmp_path / "params.yaml", infra_data, storage, "ray-cluster", iterations=ITERATIONS,
                          save_every=SAVE_EVERY, val_every=18, num_workers=2, cpus_per_worker=1.0,
                          placement_strategy="STRICT_SPREAD", max_failures=1)
    job, job_id = submit(cluster, params, "two-nodes", mlflow_server.url, tmp_path / "logs" / "job.log")
    everything = [job, *cluster.daemons.values()]
    run_dir = storage / "two-nodes"

    run_id = wait_for(lambda: (run_dir / "deca_run.json").exists() and json.loads(
        (run_dir / "deca_run.json").read_text())["mlflow_run_id"], 120, "the run record", everything)
    before = wait_for(lambda: placement(client, run_id), 180, "the workers' placement in MLflow", everything)
    checkpoints = wait_for(lambda: registered_checkpoints(run_dir), 180, "the first registered checkpoint",
                           everything, every=0.2)
    cluster.kill_node(FIRST)
    killed_after = int(checkpoints[-1].rsplit("_", 1)[1])
    assert killed_after < ITERATIONS and job.alive(), "the run ended before the node was killed"
    assert before == first_nodes  # one worker on each node
    assert not leftovers(str(cluster.root / FIRST))
    cluster.add_node(SECOND)

    wait_for(lambda: not job.alive(), 300, "the job to end", [cluster.daemons[HEAD], cluster.daemons[SECOND]])
    assert job.proc.returncode == 0, job.tail(6000)
    assert (get_json(f"{cluster.dashboard}/api/jobs/{job_id}") or {}).get("status") == "SUCCEEDED"
    alive = cluster.alive()
    assert set(alive) == {HEAD, SECOND} and alive[HEAD] == first_nodes[HEAD]

    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert placement(client, run_id) == alive  # the restarted group: the head and the new node
    resumed = int(run.data.tags["resumed_from_iteration"])
    assert killed_after <= resumed < ITERATIONS and resumed % SAVE_EVERY == 0
    restarts = client.get_metric_history(run_id, "resumed_from_iteration")
    assert [(m.step, m.value) for m in restarts] == [(resumed, resumed)]  # exactly one restart
    steps = sorted({m.step for m in client.get_metric_history(run_id, "train/lr")})
    assert steps == list(range(1, ITERATIONS + 1))
    record = json.loads((run_dir / "deca_run.json").read_text())
    assert record["finished"]
    final = run_dir / registered_checkpoints(run_dir)[-1]
    state = torch.load(final / "state.pt", map_location="cpu", weights_only=False)
    assert state["iteration"] == ITERATIONS and sorted(os.listdir(final)) == ["rank0.pt", "rank1.pt", "state.pt"]
    assert "best_checkpoint/model.pt" in {a.path for a in client.list_artifacts(run_id, "best_checkpoint")}
    print(f"node killed after checkpoint {killed_after} was registered; the run resumed from {resumed}")
