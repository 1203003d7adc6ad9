"""Beam on Dask: ``prepare.runner: DaskRunner`` runs `deca prepare` on a Dask distributed cluster.

Beam 2.77 ships a DaskRunner (`apache_beam.runners.dask`), which translates a pipeline into Dask bags.
As shipped it cannot run these jobs (checked on the prepare pipeline):

- a ParDo with tagged outputs hands *every* output to each consumer, without the tags (PlanSplit and
  ConvertShard route drops, errors and ids through tagged outputs);
- it computes only the last transform it visited, so branches that do not lead there never run
  (FinalizeTask, which writes stats.json, is one);
- it reports no metrics (the prepare and vocabulary counters), and a local cluster is never shut down.

This runner keeps Beam's translation of primitives onto Dask bags and changes the rest: each output
PCollection has its own bag (tagged outputs are split by tag), every leaf of the graph is computed in one
submission, Beam counters are collected per bundle (from the bundles that produced the final results, so a
task rerun after a lost worker counts once), GroupByKey spreads keys over a fixed number of partitions
(an integer key k goes to partition k mod n, so `units.BalanceUnits`'s bins map one-to-one onto
partitions), CombinePerKey combines within each bundle before its shuffle (as Beam's DirectRunner does),
and the job's cluster connection (or the local cluster it started) is closed when it ends.

The translation onto Dask bags (what runs on the workers, one bag per PCollection, the shuffle, the counters
per bundle) is in pipelines/dask_bags.py; this module holds the options, the connection to the cluster, the
runner that submits the translated graph, and its result and metrics.

Options (Beam flags): ``--dask_client_address`` (Beam's; a scheduler ``tcp://host:8786``, or
``--dask_scheduler_file``), else a local cluster of ``--dask_local_workers`` processes on 127.0.0.1;
``--dask_npartitions`` (default: the cluster's worker threads); ``--dask_worker_timeout``.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from urllib.parse import urlsplit

from pipelines import beam_logging  # noqa: F401  (first: quiets Beam's import-time warning)

# Dask logs every connection and worker start at INFO, in this process and in every worker process it
# starts (they inherit the environment); DASK_LOGGING__DISTRIBUTED=info in the environment brings it back.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")

from pipelines.dask_bags import BagVisitor, LiftCombines  # noqa: E402  (imports Beam and Dask: after the line above)

import distributed as ddist  # noqa: E402
from apache_beam.metrics.execution import MetricKey, MetricResult  # noqa: E402
from apache_beam.metrics.metric import MetricResults  # noqa: E402
from apache_beam.metrics.metricbase import MetricName  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from apache_beam.runners.dask import dask_runner as beam_dask  # noqa: E402
from apache_beam.runners.dask.overrides import dask_overrides  # noqa: E402
from apache_beam.runners.runner import PipelineResult, PipelineState  # noqa: E402

from deca.errors import ConfigError, DecaError  # noqa: E402

LOG = logging.getLogger(__name__)
DaskOptions = beam_dask.DaskOptions  # --dask_client_address, --dask_npartitions, ... (Beam's)


class DecaDaskOptions(PipelineOptions):
    """The options this runner adds to Beam's DaskOptions."""

    @classmethod
    def _add_argparse_args(cls, parser) -> None:
        parser.add_argument("--dask_local_workers", type=int, default=0,
                            help="worker processes (one thread each) of the local Dask cluster started when "
                                 "no --dask_client_address is given; 0 = one per CPU")
        parser.add_argument("--dask_worker_timeout", type=float, default=60.0,
                            help="seconds a DaskRunner job waits while the cluster has no worker before it fails")


# ---- the cluster, the runner and its result ----------------------------------------------------------


def probe(address: str, timeout: float = 4.0) -> None:
    """Raise OSError at once when nothing listens at a tcp:// or tls:// scheduler address (a refused port):
    Dask's client would retry until its connection timeout (30 s) before saying so. A port that does not
    answer within `timeout` is left to the client's own timeout; other protocols are not probed."""
    url = urlsplit(address if "://" in address else f"tcp://{address}")
    if url.scheme not in ("tcp", "tls") or not url.hostname or not url.port:
        return
    try:
        socket.create_connection((url.hostname, url.port), timeout=timeout).close()
    except (socket.timeout, TimeoutError):
        return


def connect(options: PipelineOptions) -> tuple[ddist.Client, ddist.LocalCluster | None]:
    """A client of the scheduler the options name (--dask_client_address / --dask_scheduler_file), or of a
    local cluster of --dask_local_workers processes on 127.0.0.1 that this call starts."""
    kwargs = options.view_as(DaskOptions).get_all_options(drop_default=True, current_only=True)
    DaskOptions._extract_bag_kwargs(kwargs)  # noqa: SLF001  (drops npartitions/partition_size)
    if kwargs.get("address") or kwargs.get("scheduler_file"):
        where = kwargs.get("address") or kwargs.get("scheduler_file")
        try:
            if kwargs.get("address"):
                probe(kwargs["address"])
            return ddist.Client(**kwargs), None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"cannot reach the Dask scheduler {where} (--dask_client_address / "
                              f"--dask_scheduler_file): {exc}") from None
    workers = options.view_as(DecaDaskOptions).dask_local_workers or os.cpu_count() or 1
    LOG.info("starting a local Dask cluster: %d worker process(es) on 127.0.0.1", workers)
    # no dashboard; the scheduler's HTTP endpoints (health, metrics) on any free loopback port, not 8787
    cluster = ddist.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                                 worker_dashboard_address=None,
                                 scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"})
    try:
        return ddist.Client(cluster, **kwargs), cluster
    except BaseException:
        cluster.close()
        raise


def executing(dask_worker) -> list:
    """(Run on each worker.) The keys of the tasks running there, cancelled ones included."""
    return [ts.key for ts in dask_worker.state.executing]


class DaskRunner(beam_dask.DaskRunner):
    """Beam's DaskRunner with tagged outputs, every branch, counters and a closed cluster (module doc).

    `open` connects (or starts the local cluster) and says how many worker threads there are, so that a
    pipeline can be built for them; `close` stops everything this runner started. Without `open`,
    `run_pipeline` connects itself and closes when the job ends.
    """

    def __init__(self) -> None:
        super().__init__()
        self.client: ddist.Client | None = None
        self.cluster: ddist.LocalCluster | None = None
        self.keys: set = set()  # the tasks of the job submitted last

    def open(self, options: PipelineOptions) -> int:
        """Connect; the worker threads of the cluster (waits up to --dask_worker_timeout for one)."""
        if self.client is None:
            self.client, self.cluster = connect(options)
        timeout = options.view_as(DecaDaskOptions).dask_worker_timeout
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except (TimeoutError, ddist.TimeoutError):
            raise DecaError(f"no Dask worker joined the scheduler {self.client.scheduler.address} within "
                            f"{timeout:g} s (--dask_worker_timeout)") from None
        return sum(self.client.nthreads().values())

    def close(self) -> None:
        """Close the client, and the local cluster if this runner started it (its workers exit)."""
        client, cluster, self.client, self.cluster = self.client, self.cluster, None, None
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()

    def run_pipeline(self, pipeline, options):
        """Translate `pipeline` to Dask and submit it; the result waits for it."""
        owned = self.client is None
        slots = self.open(options)
        dask_options = options.view_as(DaskOptions)
        pipeline.replace_all([LiftCombines(), *dask_overrides()])  # in order: lifting adds a GroupByKey
        visitor = BagVisitor(dask_options.npartitions or slots, dask_options.partition_size)
        pipeline.visit(visitor)
        final = visitor.final()
        self.keys = set(final.__dask_graph__().keys())
        future = self.client.compute(final)
        return DaskResult(self, future, options.view_as(DecaDaskOptions).dask_worker_timeout, owned)

    def stop(self, future, timeout: float = 60.0) -> None:
        """Cancel the job and wait (up to `timeout`) until none of its tasks runs any more: a task already
        running goes on until it returns, and the caller may remove what the job was writing. (On a local
        cluster there is no wait: `close` ends its worker processes, and the caller calls it first.)"""
        client = self.client
        if client is None or client.status != "running":
            return
        client.cancel([future], force=True)
        if self.cluster is not None:  # a local cluster: `close` (next) stops its worker processes
            return
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                running = [k for keys in client.run(executing).values() for k in keys if k in self.keys]
            except Exception:  # noqa: BLE001  (a worker that is going away)
                running = [None]
            if not running:
                return
            time.sleep(0.2)
        LOG.warning("%d Dask task(s) of the failed job still running after %g s", len(running), timeout)


class DaskResult(PipelineResult):
    """A submitted DaskRunner job: one future that completes when every leaf did."""

    def __init__(self, runner: DaskRunner, future, worker_timeout: float, owned: bool):
        super().__init__(PipelineState.RUNNING)
        self.runner, self.future, self.worker_timeout, self.owned = runner, future, worker_timeout, owned
        self.counts: dict = {}

    def wait_until_finish(self, duration=None):
        """Wait (`duration` ms, or until the end); raises what the job raised, or a DecaError when workers
        died (KilledWorker) or the cluster had no worker for --dask_worker_timeout seconds."""
        try:
            counts = wait(self.runner.client, self.future, self.worker_timeout, duration)
        except BaseException:
            self._state = PipelineState.FAILED
            self.runner.stop(self.future)
            if self.owned:
                self.runner.close()
            raise
        if counts is None:
            return self._state
        self.counts, self._state = counts, PipelineState.DONE
        if self.owned:
            self.runner.close()
        return self._state

    def cancel(self):
        """Cancel the job (see `DaskRunner.stop`)."""
        self.runner.stop(self.future)
        self._state = PipelineState.CANCELLED
        return self._state

    def metrics(self) -> MetricResults:
        """The job's counters (empty until it finished)."""
        return DaskMetrics(self.counts)


def wait(client: ddist.Client, future, worker_timeout: float, duration_ms: float | None = None) -> dict | None:
    """The future's result (the counters); None once `duration_ms` passed; DecaError for lost workers."""
    start = time.monotonic()
    idle_since = None
    while True:
        try:
            ddist.wait(future, timeout=1.0)
            return future.result()
        except ddist.KilledWorker as exc:
            raise DecaError(f"Dask workers died while running the job, more often than the scheduler retries "
                            f"a task (distributed.scheduler.allowed-failures): {exc}") from None
        except (TimeoutError, ddist.TimeoutError):
            pass
        now = time.monotonic()
        if duration_ms is not None and now - start > duration_ms / 1000:
            return None
        if client.nthreads():
            idle_since = None
        elif idle_since is None:
            idle_since = now
        elif now - idle_since > worker_timeout:
            raise DecaError(f"the Dask cluster {client.scheduler.address} has had no worker for "
                            f"{worker_timeout:g} s (--dask_worker_timeout); the job was stopped")


class DaskMetrics(MetricResults):
    """The counters of a finished DaskRunner job (committed = attempted: only final bundles count)."""

    def __init__(self, counts: dict):
        self.counts = counts

    def query(self, filter=None) -> dict:  # noqa: A002  (Beam's signature)
        """Beam's MetricResults.query: the counters that match `filter`."""
        found = []
        for (step, namespace, name), value in sorted(self.counts.items()):
            key = MetricKey(step, MetricName(namespace, name))
            if self.matches(filter, key):
                found.append(MetricResult(key, value, value))
        return {self.COUNTERS: found, self.DISTRIBUTIONS: [], self.GAUGES: [], self.STRINGSETS: [],
                self.BOUNDED_TRIES: []}
