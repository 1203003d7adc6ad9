"""The DaskRunner's translation to Dask bags (pipelines/dask_bags.py), on Dask's synchronous scheduler (no
cluster): tagged outputs go to their own consumers and every branch runs, GroupByKey, CombinePerKey and side
inputs, where a key goes in the shuffle, and a transform it cannot run is named."""
from __future__ import annotations

import apache_beam as beam
import dask
import pytest
from apache_beam.runners.dask.overrides import dask_overrides

from deca.errors import ConfigError
from pipelines import dask_bags


class Route(beam.DoFn):
    def process(self, x):
        beam.metrics.Metrics.counter("test", "seen").inc()
        if x % 3 == 0:
            yield beam.pvalue.TaggedOutput("three", x)
        elif x % 2:
            yield beam.pvalue.TaggedOutput("odd", x)
        else:
            yield x


def translate(build, partitions: int = 3) -> dict:
    """Build a pipeline with `build(p)`, translate it, compute it in this process: the job's counters."""
    p = beam.Pipeline(runner="BundleBasedDirectRunner")
    build(p)
    p.replace_all([dask_bags.LiftCombines(), *dask_overrides()])
    visitor = dask_bags.BagVisitor(partitions)
    p.visit(visitor)
    return dask.compute(visitor.final(), scheduler="sync")[0]


def test_tagged_outputs_go_to_their_own_consumers_and_every_branch_runs():
    got: dict[str, list] = {}

    def build(p):
        routed = p | beam.Create(range(12)) | beam.ParDo(Route()).with_outputs("odd", "three", main="even")
        for tag in ("even", "odd", "three"):  # three leaves: the last one alone is all Beam's runner computes
            _ = routed[tag] | f"Keep{tag}" >> beam.Map(lambda x, t=tag: got.setdefault(t, []).append(x))

    counts = translate(build)
    assert {t: sorted(v) for t, v in got.items()} == {"even": [2, 4, 8, 10], "odd": [1, 5, 7, 11],
                                                      "three": [0, 3, 6, 9]}
    assert counts == {("ParDo(Route)/ParDo(Route)", "test", "seen"): 12}


def test_group_by_key_combine_and_side_inputs():
    got = []

    def build(p):
        words = p | beam.Create(["a b", "b c", "c c", "d"]) | beam.FlatMap(str.split)
        counts = words | beam.Map(lambda w: (w, 1)) | beam.CombinePerKey(sum)
        total = words | beam.combiners.Count.Globally()
        _ = counts | beam.Map(lambda kv, n: got.append((kv[0], kv[1], n)), beam.pvalue.AsSingleton(total))

    translate(build)
    assert sorted(got) == [("a", 1, 7), ("b", 2, 7), ("c", 3, 7), ("d", 1, 7)]


def test_integer_keys_go_to_their_own_partition_in_order():
    assert [dask_bags.bucket(k, 4) for k in range(6)] == [0, 1, 2, 3, 0, 1]
    assert dask_bags.bucket(("sst", "train", 3), 4) == dask_bags.bucket(("sst", "train", 3), 4)
    pieces = [dask_bags.split_by_key([(1, "a"), (0, "b"), (1, "c")], 2), dask_bags.split_by_key([(1, "d")], 2)]
    assert dask_bags.group([p[1] for p in pieces]) == [(1, ["a", "c", "d"])]


def test_a_transform_it_cannot_run_is_named():
    with pytest.raises(ConfigError, match="Impulse"):
        translate(lambda p: p | beam.Impulse())
    with pytest.raises(ConfigError, match="WindowInto"):  # windows other than the global one
        translate(lambda p: p | beam.Create([1]) | beam.WindowInto(beam.window.FixedWindows(10)))
