"""eval/clustered.py: the clustered two-level interval covers the truth on clustered data where resampling
examples one by one does not, pairs share their cluster draws, and runs without per-example data fall back to
the seed-only interval, labelled."""
from __future__ import annotations

import numpy as np
import pytest

from eval import clustered
from eval.stats import Sample, seed_difference


def simulate(rng, seeds: int, clusters: int, per: int, sd: tuple[float, float, float, float], mean: float = 50.0):
    """(seeds, examples) scores mean + u_s + w_c + x_i + e_si (sds of seed, cluster, example, residual) and
    each example's cluster."""
    codes = np.repeat(np.arange(clusters), per)
    u = rng.normal(0, sd[0], (seeds, 1))
    w, x = rng.normal(0, sd[1], clusters)[codes], rng.normal(0, sd[2], len(codes))
    return mean + u + w + x + rng.normal(0, sd[3], (seeds, len(codes))), codes


def test_the_clustered_interval_covers_the_mean_and_the_unclustered_one_undercovers():
    """200 simulated sides, 2 seeds on 50 contexts of 4 questions, intra-cluster correlation about 0.8: the
    clustered interval covers the population mean in 95% of them (within 3 binomial sds, and the percentile
    bootstrap's known narrowness with 50 clusters); resampling questions one by one covers it far less."""
    rng = np.random.default_rng(7)
    covered = {"clustered": 0, "one by one": 0}
    for trial in range(200):
        scores, codes = simulate(rng, 2, 50, 4, (0.5, 8.0, 3.0, 3.0))
        sample = Sample.of("mean", *scores)
        covered["clustered"] += clustered.side(sample, codes, replicates=250, seed=trial).interval.covers(50.0)
        covered["one by one"] += clustered.side(sample, None, replicates=250, seed=trial).interval.covers(50.0)
    assert 0.90 * 200 <= covered["clustered"] <= 0.99 * 200
    assert covered["one by one"] <= 0.82 * 200


def test_labels_say_how_the_interval_was_made():
    rng = np.random.default_rng(8)
    scores, codes = simulate(rng, 2, 10, 3, (1.0, 5.0, 2.0, 2.0))
    sample = Sample.of("mean", *scores)
    assert clustered.side(sample, codes, replicates=50).method == clustered.CLUSTERED
    assert clustered.side(sample, replicates=50).method == clustered.TWO_LEVEL
    assert clustered.side(None, seed_values=[80.0, 82.0]).method == clustered.SEED_ONLY


def test_without_per_example_data_the_difference_is_welchs_over_the_seeds():
    found = clustered.difference(None, None, seed_values=([80.0, 82.0], [85.0, 87.0]))
    assert found.method == clustered.SEED_ONLY and found.interval == seed_difference([80.0, 82.0], [85.0, 87.0])
    assert 0.05 < found.p < 0.1 and found.se == pytest.approx(np.sqrt(2.0))


def test_two_identical_seeds_get_an_interval_from_the_examples():
    """eval.stats's interval of two identical seeds has width 0: the seed-only one here is unbounded, and the
    two-level one is as wide as the 82 examples make it."""
    rng = np.random.default_rng(9)
    run = 100.0 * (rng.random(82) < 0.53)
    sample = Sample.of("mean", run, run)
    two_level = clustered.side(sample, replicates=500).interval
    seed_only = clustered.side(None, seed_values=[run.mean(), run.mean()]).interval
    assert seed_only.low == -np.inf and seed_only.high == np.inf and two_level.low < 50.0 < two_level.high
    same = clustered.difference(None, None, seed_values=([80.0, 80.0], [85.0, 85.0]))
    assert same.interval.low == -np.inf and same.p == 1.0 and same.se == np.inf


def test_a_pair_shares_its_cluster_draws_and_clusters_widen_the_difference():
    rng = np.random.default_rng(10)
    a, codes = simulate(rng, 1, 40, 5, (0.0, 6.0, 2.0, 2.0))
    same = clustered.difference(Sample.of("mean", *a), Sample.of("mean", *a), codes, replicates=200)
    assert same.interval.low == same.interval.high == 0.0 and same.p == 1.0
    shift = rng.normal(0, 4.0, 40)[codes] + rng.normal(0, 1.0, len(codes))  # the difference varies by context
    b = Sample.of("mean", *(a + 1.0 + shift))
    by_context = clustered.difference(Sample.of("mean", *a), b, codes, replicates=800)
    one_by_one = clustered.difference(Sample.of("mean", *a), b, None, replicates=800)
    assert by_context.se > 1.5 * one_by_one.se


def test_clusters_of_unequal_size_weigh_by_their_examples():
    """Each replicate's mean is over the examples drawn, however many its clusters hold."""
    values = np.array([100.0, 100.0, 100.0, 0.0])
    sample = Sample.of("mean", values)
    weights = clustered.cluster_weights(np.random.default_rng(0), clustered.cluster_codes(["p", "p", "p", "q"], 4), 200)
    got = clustered.replicate_values(sample, weights, np.ones((200, 1)))
    assert set(np.round(got, 6)) <= {0.0, 75.0, 100.0}
    with pytest.raises(ValueError, match="cluster ids"):
        clustered.cluster_codes(["p"], 4)


def test_contexts_make_the_clusters_of_a_task():
    assert clustered.context_clusters("squad", ["q1", "q2", "q3"], ["para a", "para a", "para b"]) == [
        "para a", "para a", "para b"]
    assert clustered.context_clusters("woz.en", ["en_0_0", "en_0_1", "en_1_0"], ["hi", "a pub", "hello"]) == [
        "en_0", "en_0", "en_1"]
    assert clustered.context_clusters("sst", ["1", "2"], ["good film", "bad film"]) is None
    assert clustered.context_clusters("sst", ["1", "2"], ["same", "same"]) is None  # sentences stand alone
    assert clustered.context_clusters("schema", ["schema0-0", "schema0-1", "schema1-0"], ["a", "b", "c"]) == [
        "schema0", "schema0", "schema1"]
    assert [clustered.cluster_unit(t) for t in ("squad_dev", "srl", "woz.en", "schema")] == [
        "paragraph", "sentence", "dialogue", "schema"]


def test_few_seeds_widen_the_interval_to_its_level():
    """200 simulated sides of 3 seeds whose spread dominates (seed sd 3 against examples that average out): the
    percentile interval alone sees 2/3 of the seeds' variance at the normal's quantiles and covers the truth far
    less than 95%; corrected (the seeds' own variance, t at the Welch-Satterthwaite degrees of freedom) it covers
    it at its level, and the estimate says so (df near S - 1 = 2)."""
    rng = np.random.default_rng(11)
    covered, plain, dfs = 0, 0, []
    for trial in range(200):
        scores, codes = simulate(rng, 3, 100, 2, (3.0, 1.0, 1.0, 1.0))
        sample = Sample.of("mean", *scores)
        found = clustered.side(sample, codes, replicates=250, seed=trial)
        covered += found.interval.covers(50.0)
        dfs.append(found.df)
        seeds = [clustered.seed_weights(np.random.default_rng(trial), 3, 250)]
        reps = clustered.clustered_replicates([sample], codes, 250, np.random.default_rng(trial + 1000), seeds)[0]
        plain += clustered.percentile_interval(sample.point(), reps).covers(50.0)
    assert plain <= 0.80 * 200
    assert 0.91 * 200 <= covered <= 0.995 * 200
    assert 2.0 <= float(np.median(dfs)) <= 3.5


def test_a_difference_of_few_seeds_gets_students_p_and_its_degrees_of_freedom():
    rng = np.random.default_rng(12)
    a, codes = simulate(rng, 3, 60, 2, (2.0, 1.0, 1.0, 1.0))
    b = a + 3.0 + rng.normal(0, 2.0, (3, 1))
    found = clustered.difference(Sample.of("mean", *a), Sample.of("mean", *b), codes, replicates=400)
    assert 2.0 <= found.df <= 8.0 and found.interval.covers(found.interval.value)
    from eval.stats import t_two_sided_p
    assert found.p == pytest.approx(t_two_sided_p(abs(found.interval.value) / found.se, found.df))


def test_the_widened_interval_stays_within_the_metrics_range():
    """Five SST models on 872 reviews, one right on 382 of them, four on none (the zero-shot row): widened for
    five seeds, the side's interval would reach below 0 EM; it stops at 0."""
    runs = [np.zeros(872) for _ in range(4)] + [100.0 * (np.arange(872) < 382)]
    found = clustered.side(Sample.of("mean", *runs), replicates=500)
    assert found.interval.low == 0.0 < found.interval.value < found.interval.high <= 100.0
