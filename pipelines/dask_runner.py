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

Options (Beam flags): ``--dask_client_address`` (Beam's; a scheduler ``tcp://host:8786``, or
``--dask_scheduler_file``), else a local cluster of ``--dask_local_workers`` processes on 127.0.0.1;
``--dask_npartitions`` (default: the cluster's worker threads); ``--dask_worker_timeout``.
"""
from __future__ import annotations

import logging
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence
from urllib.parse import urlsplit

from pipelines import beam_logging  # noqa: F401  (first: quiets Beam's import-time warning)

# Dask logs every connection and worker start at INFO, in this process and in every worker process it
# starts (they inherit the environment); DASK_LOGGING__DISTRIBUTED=info in the environment brings it back.
os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")

import apache_beam as beam  # noqa: E402
import dask  # noqa: E402
import dask.bag as db  # noqa: E402
import distributed as ddist  # noqa: E402
from apache_beam.metrics.execution import MetricKey, MetricResult, MetricsContainer  # noqa: E402
from apache_beam.metrics.metric import MetricResults  # noqa: E402
from apache_beam.metrics.metricbase import MetricName  # noqa: E402
from apache_beam.options.pipeline_options import PipelineOptions  # noqa: E402
from apache_beam.pipeline import PipelineVisitor, PTransformOverride  # noqa: E402
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler  # noqa: E402
from apache_beam.runners.dask import dask_runner as beam_dask  # noqa: E402
from apache_beam.runners.dask.overrides import (  # noqa: E402
    _Create, _Flatten, _GroupAlsoByWindow, _GroupByKeyOnly, _Reshuffle, dask_overrides)
from apache_beam.runners.dask.transform_evaluator import OneReceiver, get_windowed_value  # noqa: E402
from apache_beam.runners.runner import PipelineResult, PipelineState  # noqa: E402
from apache_beam.runners.worker import statesampler  # noqa: E402
from apache_beam.transforms.combiners import LiftedCombinePerKey  # noqa: E402
from apache_beam.transforms.sideinputs import SideInputMap  # noqa: E402
from apache_beam.transforms.window import GlobalWindow, GlobalWindows  # noqa: E402
from apache_beam.utils import counters as beam_counters  # noqa: E402
from apache_beam.utils.windowed_value import WindowedValue  # noqa: E402

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


# ---- what runs on the workers ------------------------------------------------------------------------


class Counts(dict):
    """A bundle's Beam counters, ``{(step, namespace, name): value}``, as the last item of its partition."""


@dataclass
class DoFnSpec:
    """What a worker needs to run one ParDo over a partition."""

    fn: Any
    label: str
    window_fn: Any
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    sides: list = field(default_factory=list)  # (view class, view options) per side input


def run_bundle(items: Iterable[Any], spec: DoFnSpec, *side_values: list) -> list:
    """Run a DoFn over one partition (one bundle): ``(tag, value)`` per output (tag None: the main output),
    then the bundle's counters (`Counts`)."""
    receivers = OneReceiver()
    handler = _OutputHandler(window_fn=spec.window_fn, main_receivers=receivers[None], tagged_receivers=receivers,
                             per_element_output_counter=None, output_batch_converter=None,
                             process_yields_batches=False, process_batch_yields_elements=False)
    sides = [SideInputMap(view, options, [WindowedValue(v, 0, (GlobalWindow(),)) for v in values])
             for (view, options), values in zip(spec.sides, side_values)]
    invoker = DoFnInvoker.create_invoker(
        DoFnSignature(spec.fn), handler, context=DoFnContext(spec.label, state=None), side_inputs=sides or None,
        input_args=list(spec.args), input_kwargs=dict(spec.kwargs), user_state_context=None,
        bundle_finalizer_param=beam.DoFn.BundleFinalizerParam())
    container = MetricsContainer(spec.label)
    sampler = statesampler.StateSampler("", beam_counters.CounterFactory())
    previous = statesampler.get_current_tracker()
    statesampler.set_current_tracker(sampler)  # Beam's Metrics find the container through it
    try:
        with sampler.scoped_state(spec.label, "process", metrics_container=container):
            invoker.invoke_setup()
            invoker.invoke_start_bundle()
            for item in items:
                invoker.invoke_process(get_windowed_value(item, spec.window_fn))
            invoker.invoke_finish_bundle()
            invoker.invoke_teardown()
    finally:
        statesampler.set_current_tracker(previous)
    out: list = [(v.tag, v.value.value) if isinstance(v, beam.pvalue.TaggedOutput) else (None, v.value)
                 for v in receivers.values]
    counts = Counts({(k.step, k.metric.namespace, k.metric.name): v
                     for k, v in container.get_cumulative().counters.items()})
    return out + [counts]


def select(part: list, tag: str | None) -> list:
    """The values of one output (tag) of a `run_bundle` partition."""
    return [item[1] for item in part if not isinstance(item, Counts) and item[0] == tag]


def counts_of(part: list) -> list:
    """The `Counts` of a `run_bundle` partition."""
    return [item for item in part if isinstance(item, Counts)]


def drain(part: Iterable[Any]) -> list:
    """Consume a leaf partition (what a transform without consumers outputs is dropped)."""
    for _ in part:
        pass
    return []


def bucket(key: Any, n: int) -> int:
    """The partition of a GroupByKey key: k mod n for an integer, else a hash that is the same in every
    process (Python's str hash is not)."""
    if type(key) is int:
        return key % n
    return int(dask.base.tokenize(key), 16) % n


def split_by_key(part: Iterable[tuple], n: int) -> list[list]:
    """One input partition of a GroupByKey cut into the `n` output partitions' pieces (`bucket`)."""
    out: list[list] = [[] for _ in range(n)]
    for item in part:
        out[bucket(item[0], n)].append(item)
    return out


def group(pieces: Sequence[list]) -> list:
    """One GroupByKey output partition: ``(key, [values])``, keys and values in input order."""
    groups: dict = {}
    for piece in pieces:
        for key, value in piece:
            groups.setdefault(key, []).append(value.value if isinstance(value, WindowedValue) else value)
    return list(groups.items())


def concat(parts: Sequence[list]) -> list:
    """A whole PCollection (a side input) from its partitions."""
    return [item for part in parts for item in part]


def finish(drained: list, counts: list) -> dict:
    """Every leaf's partitions are done: the job's counters, summed over bundles."""
    total: dict = {}
    for part in counts:
        for bundle in part:
            for key, value in bundle.items():
                total[key] = total.get(key, 0) + value
    return total


# ---- the pipeline as Dask bags -----------------------------------------------------------------------


class BagVisitor(PipelineVisitor):
    """Translates each primitive of a pipeline into Dask bags, one bag per PCollection."""

    NO_OPS = (_GroupAlsoByWindow, _Reshuffle)  # the grouping does GroupAlsoByWindow (global window only)

    def __init__(self, partitions: int, partition_size: int | None = None):
        self.partitions = max(partitions, 1)
        self.partition_size = partition_size
        self.bags: dict = {}  # PCollection -> Bag
        self.consumed: set = set()
        self.bundles: list[db.Bag] = []  # every ParDo's raw output (for the counters)

    def visit_transform(self, node) -> None:
        transform = node.transform
        inputs = [pc for pc in node.inputs if not isinstance(pc, beam.pvalue.PBegin)]
        self.consumed.update(inputs)
        self.consumed.update(si.pvalue for si in node.side_inputs)
        bags = [self.bags[pc] for pc in inputs]
        if type(transform) is beam.ParDo:
            raw = self.par_do(node, bags[0])
            for tag, pcoll in node.outputs.items():
                self.bags[pcoll] = raw.map_partitions(select, tag)
            return
        if isinstance(transform, _Create):
            out = self.create(list(transform.values))
        elif isinstance(transform, _Flatten):
            out = db.concat(bags) if bags else db.from_sequence([], npartitions=1)
        elif isinstance(transform, _GroupByKeyOnly):
            out = self.group_by_key(bags[0])
        elif isinstance(transform, self.NO_OPS) or self.global_window(transform):
            out = bags[0]
        else:
            raise ConfigError(f"the DaskRunner cannot run the Beam transform {node.full_label!r} "
                              f"({type(transform).__name__}); use another runner for this pipeline")
        for pcoll in node.outputs.values():
            self.bags[pcoll] = out

    @staticmethod
    def global_window(transform) -> bool:
        """A WindowInto the global window (the only one this runner has; others are refused)."""
        return isinstance(transform, beam.WindowInto) and isinstance(transform.windowing.windowfn, GlobalWindows)

    def create(self, items: list) -> db.Bag:
        if self.partition_size:
            return db.from_sequence(items, partition_size=self.partition_size)
        return db.from_sequence(items, npartitions=max(1, min(len(items), self.partitions)))

    def group_by_key(self, bag: db.Bag) -> db.Bag:
        """A GroupByKey as a shuffle to `partitions` partitions: `bucket` decides where a key goes."""
        n = self.partitions
        pieces = [dask.delayed(split_by_key, nout=n)(part, n) for part in bag.to_delayed(optimize_graph=False)]
        return db.from_delayed([dask.delayed(group)([p[j] for p in pieces]) for j in range(n)])

    def par_do(self, node, bag: db.Bag) -> db.Bag:
        """A ParDo's raw output: `run_bundle` over each partition (side inputs computed whole)."""
        transform = node.transform
        main = next(iter(node.main_inputs.values()))
        spec = DoFnSpec(fn=transform.fn, label=node.full_label, window_fn=main.windowing.windowfn,
                        args=tuple(transform.args), kwargs=dict(transform.kwargs),  # side inputs as placeholders
                        sides=[(type(si), si._view_options()) for si in node.side_inputs])  # noqa: SLF001
        side_values = [dask.delayed(concat)(self.bags[si.pvalue].to_delayed(optimize_graph=False))
                       for si in node.side_inputs]
        raw = bag.map_partitions(run_bundle, spec, *side_values)
        self.bundles.append(raw)
        return raw

    def final(self):
        """One Delayed that depends on every partition of every leaf and returns the job's counters."""
        leaves = [bag for pc, bag in self.bags.items() if pc not in self.consumed]
        drained = [d for bag in leaves for d in bag.map_partitions(drain).to_delayed(optimize_graph=False)]
        counts = [d for raw in self.bundles for d in raw.map_partitions(counts_of).to_delayed(optimize_graph=False)]
        return dask.delayed(finish)(drained, counts)


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


class LiftCombines(PTransformOverride):
    """CombinePerKey (and so CombineGlobally) as Beam's DirectRunner runs it: values combined within each
    bundle before the GroupByKey, so that a key crosses the shuffle once per partition, not once per value
    (the vocabulary job: a (token, count) pair per token per shard otherwise)."""

    def matches(self, applied_ptransform) -> bool:
        return (isinstance(applied_ptransform.transform, beam.CombinePerKey)
                and applied_ptransform.inputs[0].windowing.is_default())

    def get_replacement_transform_for_applied_ptransform(self, applied_ptransform):
        transform = applied_ptransform.transform
        return LiftedCombinePerKey(transform.fn, transform.args, transform.kwargs)


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
