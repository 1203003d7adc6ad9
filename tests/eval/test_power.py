"""eval/power.py: Holm's adjusted p-values against a reference, the variance components of a clustered
two-level design, a planted effect the size of the MDE found at the stated power, and the seeds or contexts a
target effect needs.

The Holm reference: statsmodels is not installed here, so the adjusted p-values are checked against vectors
computed by hand from Holm's (1979) definition (one of them Wikipedia's worked example) and against an
independent implementation, the closed testing procedure with Bonferroni's local tests (Marcus, Peritz &
Gabriel 1976) that Holm's method is the shortcut of: hypothesis i's adjusted p is the largest, over every set
of hypotheses holding i, of min(1, |set| x the set's smallest p)."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from eval import clustered, power, stats
from eval.stats import Sample


def closed_testing(p: list[float]) -> list[float]:
    """Adjusted p-values of closed testing with Bonferroni's local tests, by brute force over all subsets."""
    m = len(p)
    subsets = [s for k in range(1, m + 1) for s in itertools.combinations(range(m), k)]
    return [max(min(1.0, len(s) * min(p[j] for j in s)) for s in subsets if i in s) for i in range(m)]


def test_holm_by_hand():
    """The example of Wikipedia's "Holm-Bonferroni method": of p = 0.01, 0.04, 0.03, 0.005 at 5%, Holm rejects
    the first and the last. Sorted 0.005, 0.01, 0.03, 0.04: 4 x 0.005, 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)."""
    adjusted = power.holm([0.01, 0.04, 0.03, 0.005])
    assert adjusted == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert [p < 0.05 for p in adjusted] == [True, False, False, True]
    assert power.holm([0.01, 0.04, 0.20, 0.03, 0.005, 0.07]) == pytest.approx([0.05, 0.12, 0.20, 0.12, 0.03, 0.14])
    assert power.holm([0.5, 0.9]) == [1.0, 1.0] and power.holm([0.02, 0.9]) == [0.04, 0.9] and power.holm([]) == []
    with pytest.raises(ValueError):
        power.holm([0.2, 1.5])


def test_holm_matches_closed_testing_on_random_vectors():
    rng = np.random.default_rng(11)
    for m in (1, 2, 5, 8):
        for _ in range(20):
            p = list(rng.random(m) ** 3)
            p[0] = p[-1]  # ties
            assert power.holm(p) == pytest.approx(closed_testing(p))


def test_twelve_steps_at_95_percent_each_make_a_false_call_half_the_time_and_holm_five_percent():
    rng = np.random.default_rng(12)
    p = rng.random((4000, 12))  # null p-values of 12 steps, 4000 tables
    assert np.mean((p < 0.05).any(axis=1)) == pytest.approx(1 - 0.95 ** 12, abs=0.03)
    adjusted = np.array([power.holm(row) for row in p[:1000]])
    assert np.mean((adjusted < 0.05).any(axis=1)) <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / 1000)


def test_mde_is_the_quantiles_times_the_standard_error():
    assert power.mde(1.0) == pytest.approx(1.959964 + 0.841621, abs=1e-5)
    assert power.mde(2.0, df=3) == pytest.approx(2 * (3.182446 + 0.978472), abs=1e-4)  # t quantiles
    assert power.underpowered(15.0, -4.0) and not power.underpowered(3.0, 4.0)


def test_an_mde_is_never_inside_the_welch_interval_it_is_judged_with():
    """Welch's df is fractional (1.92 for two seeds a side with unequal spreads); the interval rounds it down
    (eval.stats.t_quantile), and so must the MDE, or it reads as powered an effect the interval cannot see."""
    a, b = [78.8, 79.1], [80.9, 78.3]
    interval = stats.seed_difference(a, b)
    se = math.sqrt(np.var(a, ddof=1) / 2 + np.var(b, ddof=1) / 2)
    df = (np.var(a, ddof=1) / 2 + np.var(b, ddof=1) / 2) ** 2 / (
        (np.var(a, ddof=1) / 2) ** 2 + (np.var(b, ddof=1) / 2) ** 2)
    assert 1 < df < 2
    assert power.mde(se, df=df) > (interval.high - interval.low) / 2
    assert power.mde(se, df=df) == pytest.approx(power.mde(se, df=1))


def pair(rng, seeds: int, clusters: int, per: int, sd: tuple[float, float, float, float], delta: float):
    """Two sides (seeds, examples) on the same examples, shared example difficulty (it cancels), b - a =
    delta + a per-context and a per-example effect; sds of seed, context, example effect, residual."""
    codes = np.repeat(np.arange(clusters), per)
    n = len(codes)
    shared = rng.normal(0, 10.0, n)
    a = 50 + shared + rng.normal(0, sd[0], (seeds, 1)) + rng.normal(0, sd[3], (seeds, n))
    effect = delta + rng.normal(0, sd[1], clusters)[codes] + rng.normal(0, sd[2], n)
    b = 50 + shared + effect + rng.normal(0, sd[0], (seeds, 1)) + rng.normal(0, sd[3], (seeds, n))
    return a, b, codes


SD = (1.0, 5.0, 4.0, 8.0)
TRUE = power.Components(seed=2 * SD[0] ** 2, between=SD[1] ** 2, within=SD[2] ** 2, residual=2 * SD[3] ** 2)
SEEDS, CLUSTERS, PER = 4, 40, 3


def test_components_are_recovered_from_clustered_runs():
    rng = np.random.default_rng(13)
    found = [power.components(*pair(rng, SEEDS, CLUSTERS, PER, SD, 0.0)) for _ in range(200)]
    for name in ("seed", "between", "within", "residual"):
        assert np.mean([getattr(f, name) for f in found]) == pytest.approx(getattr(TRUE, name), rel=0.2)


def test_a_planted_effect_of_the_mde_is_found_at_the_stated_power():
    """200 designs (4 seeds a side, 40 contexts of 3 questions) with b - a = the design's MDE at 80% power:
    the difference over its standard error from the estimated components clears 1.96 in about 80% of them
    (3 binomial sds); the clustered bootstrap's standard error is the design's, or somewhat wider (crossed
    seeds and examples resampled independently: conservative, Owen 2007)."""
    rng = np.random.default_rng(0)
    planted = TRUE.mde(SEEDS, CLUSTERS, CLUSTERS * PER)
    found, ses = 0, []
    for trial in range(200):
        a, b, codes = pair(rng, SEEDS, CLUSTERS, PER, SD, planted)
        se = power.components(a, b, codes).se(SEEDS, CLUSTERS, CLUSTERS * PER)
        found += (b.mean() - a.mean()) / se > 1.959964
        if trial < 40:
            ses.append(clustered.difference(Sample.of("mean", *a), Sample.of("mean", *b), codes, replicates=300,
                                            seed=trial).se)
    assert abs(found / 200 - 0.8) <= 3 * math.sqrt(0.8 * 0.2 / 200)
    assert 0.95 <= np.mean(ses) / TRUE.se(SEEDS, CLUSTERS, CLUSTERS * PER) <= 1.25


def test_mwsc_sized_validation_cannot_detect_15_points():
    """Two single runs on 82 yes/no examples that disagree on 20 of them: the MDE is over 15 EM points."""
    a = np.zeros(82)
    a[:41] = 100.0
    b = a.copy()
    b[:10], b[41:51] = 0.0, 100.0
    parts = power.components(a[None], b[None])
    assert power.mde(parts.se(1, 82, 82)) > 15.0


def test_seeds_and_contexts_needed_for_a_target_effect():
    needed = power.seeds_needed(TRUE, 4.0, CLUSTERS, CLUSTERS * PER)
    assert TRUE.mde(needed, CLUSTERS, CLUSTERS * PER) <= 4.0 < TRUE.mde(needed - 1, CLUSTERS, CLUSTERS * PER)
    assert power.seeds_needed(TRUE, 1.0, CLUSTERS, CLUSTERS * PER) is None  # the contexts alone vary more
    count = power.clusters_needed(TRUE, 2.0, SEEDS, PER)
    assert TRUE.mde(SEEDS, count, count * PER) <= 2.0 < TRUE.mde(SEEDS, count - 1, (count - 1) * PER)
    assert power.clusters_needed(TRUE, 0.5, 1, PER) is None  # one seed a side varies more


def test_unequal_contexts_count_as_fewer_equal_ones():
    assert power.effective_clusters(["p"] * 6 + ["q"] * 2, 8) == pytest.approx(64 / 40)
    assert power.effective_clusters(None, 5) == 5.0


def test_the_standard_error_of_an_interval_gives_its_mde():
    from eval.stats import Interval
    assert power.se_of(Interval(1.0, 1.0 - 1.959964 * 2.0, 1.0 + 1.959964 * 2.0)) == pytest.approx(2.0, rel=1e-6)


def test_pairs_that_err_in_opposite_directions_make_a_mean_vary_less_not_more():
    """MWSC-like clusters: each schema's two sentences have opposite answers, so a model that leans to one answer
    gets one of the two right (the cluster's mean is 50 whatever it leans to). The between-cluster component is
    negative, and the examples' variance of the mean is the variance of the cluster means (about 0 here), not the
    variance of the single examples (cut at 0, the between part would give 2,500 / 82 per side)."""
    rng = np.random.default_rng(3)
    lean = rng.integers(0, 2, (5, 41)) * 100.0  # each seed's answer to each schema's first sentence
    a = np.stack([lean, 100.0 - lean], axis=2).reshape(5, 82)  # the second sentence: the other answer
    codes = np.repeat(np.arange(41), 2)
    parts = power.components(a, None, codes)
    assert parts.between < 0 and parts.variance(5, 41, 82) >= 0
    # the seeds' leaning is noise the totals cancel too: by example it would read as 2,500 / 82 of residual
    assert power.examples_variance(a, None, codes) == pytest.approx(0.0, abs=1e-9)
    cluster_means = a.mean(axis=0).reshape(41, 2).mean(axis=1)
    assert float(cluster_means.var(ddof=1)) == pytest.approx(0.0)


def test_the_examples_part_is_recovered_from_clustered_runs():
    """200 simulated pairs (4 seeds a side, 40 contexts of 3 questions, seed x example noise sd 8): the examples'
    part of the variance of the mean difference averages between / C + within / N, the residual taken out."""
    rng = np.random.default_rng(21)
    found = [power.examples_variance(*pair(rng, SEEDS, CLUSTERS, PER, SD, 0.0)) for _ in range(200)]
    expected = TRUE.between / CLUSTERS + TRUE.within / (CLUSTERS * PER)
    assert np.mean(found) == pytest.approx(expected, rel=0.15)
