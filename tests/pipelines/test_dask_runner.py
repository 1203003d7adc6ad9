"""`prepare.runner: DaskRunner` (pipelines/dask_runner.py): its options and an unreachable scheduler (fast;
the translation to Dask bags is tests/pipelines/test_dask_bags.py), and, marked slow, `deca prepare` on a Dask
cluster of separate processes on loopback: the bytes of the local runner, a local cluster that is gone after
the job, a worker killed in the middle of a job (survived), and every worker killed (one clear error, the
output folder untouched)."""
from __future__ import annotations

import threading
import time
from pathlib import Path

import psutil
import pytest
from apache_beam.options.pipeline_options import PipelineOptions

from deca.config import PrepareConfig
from deca.errors import ConfigError, DataError, DecaError
from deca.registry import all_tasks, resolve_tasks
from pipelines import beam_options, vocab
from tests.pipelines.dask_helpers import SLOW, LoopbackCluster, register_slow, write_slow_corpus
from tests.pipelines.prepare_helpers import FAKE, register_fake, write_fake_corpus
from tests.pipelines.test_prepare_workers import assert_same_bytes, files, run  # noqa: F401


# ---- the options and the scheduler connection (no cluster) -----------------------------------------


def test_dask_options_are_beam_options_and_select_the_runner():
    flags = ["--runner=DaskRunner", "--dask_client_address=tcp://127.0.0.1:8786", "--dask_local_workers=2",
             "--dask_worker_timeout=5"]
    assert beam_options.unknown_flags(flags) == []
    assert beam_options.unknown_flags(["--dask_local_worker=2"]) == ["--dask_local_worker=2"]
    options = beam_options.pipeline_options(PrepareConfig(runner="DaskRunner"), flags[1:])
    assert beam_options.is_dask(options) and beam_options.local_workers(options) == 0
    assert not beam_options.is_dask(beam_options.pipeline_options(PrepareConfig()))


def test_an_unreachable_scheduler_is_one_clear_error(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    import time

    options = PipelineOptions(["--runner=DaskRunner", f"--dask_client_address=tcp://127.0.0.1:{port}"])
    start = time.monotonic()
    with pytest.raises(ConfigError, match=f"cannot reach the Dask scheduler tcp://127.0.0.1:{port} .*refused"):
        with beam_options.job_runner(options):
            pass
    assert time.monotonic() - start < 5  # not Dask's 30 s of retries on a refused port


# ---- on a cluster of processes (slow) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two worker processes (one thread each) on 127.0.0.1; killed at the end."""
    c = LoopbackCluster(tmp_path_factory.mktemp("dask"))
    try:
        yield c.start(workers=2)
    finally:
        c.stop()


def on(cluster, *more):
    return ["--runner=DaskRunner", f"--dask_client_address={cluster.address}", *more]


@pytest.mark.slow
def test_the_miniature_corpora_on_a_dask_cluster_are_the_bytes_of_the_local_runner(cluster, fixture_corpora,
                                                                                   tmp_path):
    names = list(all_tasks())
    cfg = PrepareConfig(rows_per_shard=3)
    local = run(names, fixture_corpora, tmp_path / "local", cfg)
    dask_run = run(names, fixture_corpora, tmp_path / "dask", cfg, on(cluster))
    assert len(list((tmp_path / "dask" / "sst" / "train").glob("part-*.parquet"))) > 1
    assert_same_bytes(tmp_path / "local", tmp_path / "dask")
    assert dask_run.counters == local.counters and dask_run.stats == local.stats
    ten = resolve_tasks(["decanlp"])
    one = vocab.run(ten, tmp_path / "local", tmp_path / "vocab-local.txt", cfg)
    two = vocab.run(ten, tmp_path / "dask", tmp_path / "vocab-dask.txt", cfg, on(cluster))
    assert (tmp_path / "vocab-local.txt").read_bytes() == (tmp_path / "vocab-dask.txt").read_bytes()
    assert (one["rows"], one["tokens"]) == (two["rows"], two["tokens"]) and one["rows"] > 0


def child_processes() -> set[int]:
    """This process's children, less multiprocessing's resource tracker (one per process that spawned any:
    it stays until this process exits, whatever the job did) and the dead (a zombie an earlier test in this
    worker left has no command line; it is no process of the job's)."""
    alive = set()
    for p in psutil.Process().children(recursive=True):
        try:
            if "resource_tracker" not in " ".join(p.cmdline()):
                alive.add(p.pid)
        except (psutil.ZombieProcess, psutil.NoSuchProcess):
            pass
    return alive


@pytest.mark.slow
def test_a_local_cluster_is_stopped_after_the_job_and_after_a_failure(fixture_corpora, tmp_path, monkeypatch):
    before = child_processes()
    local = ["--runner=DaskRunner", "--dask_local_workers=2"]
    run(["sst"], fixture_corpora, tmp_path / "ok", PrepareConfig(rows_per_shard=2), local)
    assert (tmp_path / "ok" / "sst" / "stats.json").exists()
    assert child_processes() <= before
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw", train=[("t1", "yes", "fine"), ("t2", "no", "BAD")])
    with pytest.raises(DataError, match="bad line for testing"):
        run([FAKE], raw, tmp_path / "bad", PrepareConfig(), local)
    assert child_processes() <= before
    assert not (tmp_path / "bad").exists()  # the output folder this failed run created is removed


def kill_when_a_shard_is_written(cluster, out: Path, every: bool = False) -> threading.Thread:
    """As soon as the job has written its first shard (its other shards are then being converted), kill
    a worker that is running a DoFn, or `every` worker; the thread records the shards written by then and
    the workers it killed."""
    def watch():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            written = list(out.glob(f".staging-*/{SLOW}/train/part-*.parquet"))
            if written:
                busy = cluster.running("run_bundle")
                names = [n for n in cluster.procs if n.startswith("worker")] if every else busy[:1]
                for name in names:
                    cluster.kill(name)
                thread.shards_at_kill, thread.killed = len(written), names
                return
            time.sleep(0.01)

    thread = threading.Thread(target=watch, daemon=True)
    thread.shards_at_kill, thread.killed = None, []
    thread.start()
    return thread


SLOW_CFG = PrepareConfig(rows_per_shard=10)  # 12 shards of 10 examples; 2 bins, one per worker


@pytest.mark.slow
def test_a_worker_killed_mid_job_is_survived(cluster, tmp_path, monkeypatch):
    register_slow(monkeypatch)
    raw = write_slow_corpus(tmp_path / "raw", 120)
    run([SLOW], raw, tmp_path / "local", SLOW_CFG)
    killer = kill_when_a_shard_is_written(cluster, tmp_path / "dask")
    try:
        run([SLOW], raw, tmp_path / "dask", SLOW_CFG, on(cluster))
    finally:
        killer.join(timeout=30)
        cluster.start_worker()  # back to two for the next test
    assert killer.shards_at_kill is not None and killer.shards_at_kill < 12 and len(killer.killed) == 1
    assert_same_bytes(tmp_path / "local", tmp_path / "dask")  # no leftover temporary file either
    cluster.wait_for_workers(2)


@pytest.mark.slow
def test_losing_every_worker_is_one_clear_error_and_leaves_the_output_as_it_was(cluster, tmp_path, monkeypatch):
    register_slow(monkeypatch)
    raw = write_slow_corpus(tmp_path / "raw", 120)
    out = tmp_path / "out"
    run([SLOW], raw, out, SLOW_CFG)  # a previous good output, which the failed job must not touch
    before = files(out)
    killer = kill_when_a_shard_is_written(cluster, out, every=True)
    start = time.monotonic()
    with pytest.raises(DecaError, match=r"has had no worker for 3 s \(--dask_worker_timeout\)"):
        run([SLOW], raw, out, SLOW_CFG, on(cluster, "--dask_worker_timeout=3"))
    killer.join(timeout=30)
    assert killer.shards_at_kill is not None and len(killer.killed) == 2 and time.monotonic() - start < 60
    assert files(out) == before and [p.name for p in out.iterdir()] == [SLOW]
