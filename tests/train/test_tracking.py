import json

from deca.config import Params
from deca.metric_logging import MemoryLogger, MLflowLogger
from eval.curves import history, plot_run
from train.tracking import PhaseLog, end_run, flatten, start_run, tracking_uri, vocab_fingerprint


def test_flatten_config():
    flat = flatten(Params())
    assert flat["train.token_budget"] == "10000"
    assert flat["train.tasks"] == '["decanlp"]'
    assert flat["train.batches_per_task"] == "{}"
    assert flat["data.mirror"] == "null"


def test_tracking_uri(tmp_path, monkeypatch):
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert tracking_uri(tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://host:5000")
    assert tracking_uri(tmp_path) == "http://host:5000"


def test_run_round_trip(tmp_path):
    uri = f"sqlite:///{tmp_path}/mlflow.db"
    vocab = tmp_path / "vocab.txt"
    vocab.write_text('" a "\t3\n" b "\t1\n')
    fp = vocab_fingerprint(vocab)
    assert fp["tokens"] == 2 and len(fp["sha256"]) == 64
    run_id = start_run(uri, "exp", "r1", {"train": {"iterations": 5}}, project=tmp_path, vocab=fp,
                       tags={"strategy": "custom"})
    logger = MLflowLogger(uri, run_id)
    phases = PhaseLog(logger)
    phases.record(0, "warm", 0)
    for step in range(1, 5):
        logger.log_metrics({"train/loss/sst": 5.0 - step, "train/lr": 0.1, "train/nan": float("nan")}, step)
        phases.record(0 if step < 3 else 1, "warm" if step < 3 else "round_robin", step)
    logger.log_metrics({"validation/sst/headline": 50.0, "validation/decascore": 50.0}, 4)
    pngs = plot_run(uri, run_id, tmp_path / "plots")
    assert [p.name for p in pngs] == ["loss.png", "validation.png"]
    assert pngs[0].read_bytes()[:4] == b"\x89PNG"
    end_run(uri, run_id)

    run = logger.client.get_run(run_id)
    assert run.info.status == "FINISHED" and run.data.params["train.iterations"] == "5"
    assert run.data.tags["phase"] == "round_robin" and run.data.tags["phase.1"] == "round_robin from iteration 3"
    assert history(uri, run_id, "phase")["phase"] == [(0, 0.0), (3, 1.0)]
    assert history(uri, run_id, "train/loss/")["train/loss/sst"][-1] == (4, 1.0)
    assert "train/nan" not in run.data.metrics  # non-finite values are not logged
    art = run.info.artifact_uri
    assert art.startswith((tmp_path / "mlruns").as_uri())
    names = {a.path for a in logger.client.list_artifacts(run_id, "config")}
    assert names == {"config/params.yaml", "config/vocab_fingerprint.json"}
    local = logger.client.download_artifacts(run_id, "config/vocab_fingerprint.json", str(tmp_path))
    assert json.loads(open(local).read())["sha256"] == fp["sha256"]


def test_phase_log_records_each_change_once_and_assumes_the_resumed_phase():
    logger = MemoryLogger()
    phases = PhaseLog(logger)
    phases.assume(0)  # resumed inside phase 0: not logged again
    for step, index in enumerate([0, 0, 1, 1, 2]):
        phases.record(index, f"p{index}", step)
    assert logger.metrics["phase"] == [(2, 1.0), (4, 2.0)]
    assert logger.tags == {"phase": "p2", "phase.1": "p1 from iteration 2", "phase.2": "p2 from iteration 4"}
    PhaseLog(None).record(0, "p0", 0)  # other ranks: nothing to log to


def test_a_new_start_closes_runs_left_running_by_a_process_that_is_gone(tmp_path):
    """A hard-killed training leaves its run RUNNING; the next start marks it KILLED, but not a run whose process
    lives or that belongs to another host."""
    import socket
    import subprocess
    import sys

    from train.tracking import client, close_stale_runs, owner_tags

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    vocab = {"sha256": "x", "tokens": 1}
    live = start_run(uri, "exp", "live", {"a": 1}, project=tmp_path, vocab=vocab)
    dead_proc = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_proc.wait()
    c = client(uri)
    exp = c.get_run(live).info.experiment_id
    dead = c.create_run(exp, run_name="dead", tags={**owner_tags(), "deca.pid": str(dead_proc.pid)}).info.run_id
    other = c.create_run(exp, run_name="other", tags={"deca.host": socket.gethostname() + "-elsewhere",
                                                     "deca.pid": str(dead_proc.pid)}).info.run_id
    assert close_stale_runs(uri, exp) == [dead]
    assert c.get_run(dead).info.status == "KILLED" and "had gone" in c.get_run(dead).data.tags["deca.closed"]
    assert c.get_run(live).info.status == "RUNNING" and c.get_run(other).info.status == "RUNNING"
    start_run(uri, "exp", "next", {"a": 1}, project=tmp_path, vocab=vocab)  # starting closes them too
    assert c.get_run(live).info.status == "RUNNING"


def test_a_full_artifact_store_names_where_and_leaves_the_run_failed(tmp_path, monkeypatch):
    """MLflow's local copy fails with an OSError naming no file; the run it had created was left RUNNING."""
    import errno

    import pytest

    from deca.errors import WriteError
    from deca.metric_logging import client

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    uri = f"sqlite:///{tmp_path}/mlflow.db"
    vocab = tmp_path / "vocab.txt"
    vocab.write_text('" a "\t3\n')
    monkeypatch.setattr("mlflow.store.artifact.local_artifact_repo.shutil.copyfileobj", full_disk)
    with pytest.raises(WriteError, match=f"^{tmp_path / 'mlruns' / 'exp'}/.*/config/params.yaml: No space left on "
                                         f"device\n  fix: free space on the disk that holds {tmp_path / 'mlruns'}"):
        start_run(uri, "exp", "r1", {"train": {"iterations": 5}}, project=tmp_path, vocab=vocab_fingerprint(vocab))
    c = client(uri)
    runs = c.search_runs([c.get_experiment_by_name("exp").experiment_id])
    assert [r.info.status for r in runs] == ["FAILED"]
