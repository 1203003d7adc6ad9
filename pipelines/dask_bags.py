"""The translation of a Beam pipeline into Dask bags, which the DaskRunner (pipelines/dask_runner.py) submits.

One bag per PCollection: a ParDo runs its DoFn over each partition as one bundle (`run_bundle`), its tagged
outputs split into bags of their own (`select`); the bundle's Beam counters are the last item of its partition
(`Counts`), so that the counters are those of the bundles that produced the final results. A GroupByKey is a
shuffle to a fixed number of partitions (`bucket`: an integer key k goes to partition k mod n); CombinePerKey
is lifted (`LiftCombines`: values combined within each bundle before its shuffle, as Beam's DirectRunner does).
`BagVisitor.final` is one Delayed over every partition of every leaf of the graph, whose result is the job's
counters. The functions of the first part run on the workers.

pipelines/dask_runner.py holds the rest: the options, the cluster connection, the runner and its result. It
imports this module after quieting Dask's logs, before Dask is first imported.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pipelines import beam_logging  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402
import dask  # noqa: E402
import dask.bag as db  # noqa: E402
from apache_beam.metrics.execution import MetricsContainer  # noqa: E402
from apache_beam.pipeline import PipelineVisitor, PTransformOverride  # noqa: E402
from apache_beam.runners.common import DoFnContext, DoFnInvoker, DoFnSignature, _OutputHandler  # noqa: E402
from apache_beam.runners.dask.overrides import (  # noqa: E402
    _Create, _Flatten, _GroupAlsoByWindow, _GroupByKeyOnly, _Reshuffle)
from apache_beam.runners.dask.transform_evaluator import OneReceiver, get_windowed_value  # noqa: E402
from apache_beam.runners.worker import statesampler  # noqa: E402
from apache_beam.transforms.combiners import LiftedCombinePerKey  # noqa: E402
from apache_beam.transforms.sideinputs import SideInputMap  # noqa: E402
from apache_beam.transforms.window import GlobalWindow, GlobalWindows  # noqa: E402
from apache_beam.utils import counters as beam_counters  # noqa: E402
from apache_beam.utils.windowed_value import WindowedValue  # noqa: E402

from deca.errors import ConfigError  # noqa: E402


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
