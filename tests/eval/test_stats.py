"""eval/stats.py and eval/verdict.py: the intervals cover what they should, planted differences are found,
corpus metrics are recomputed from resampled statistics, and the verdict rule says what it should."""
from __future__ import annotations

import math

import numpy as np
import pytest
import sacrebleu

from deca.errors import ConfigError
from eval import stats
from eval.examples import example_stats, metric_value
from eval.metrics import bleu, zre
from eval.stats import Interval, Sample
from eval.verdict import INCONCLUSIVE, NOT_TESTED, OPPOSITE, REPRODUCED, at_floor, still_rising, verdict


def binary(correct) -> Sample:
    return Sample.of("mean", 100.0 * np.asarray(correct, dtype=float))


def test_interval_covers_a_known_difference_in_95_percent_of_trials():
    """200 pairs of classifiers on 500 examples drawn from a population where b beats a by 4 points."""
    rng = np.random.default_rng(1)
    covered = 0
    for trial in range(200):
        a = rng.random(500) < 0.70
        b = np.where(rng.random(500) < 0.80, a, rng.random(500) < 0.90)  # E[b] = .8 * .70 + .2 * .90 = .74
        diff = stats.compare({"sst": binary(a)}, {"sst": binary(b)}, replicates=500, seed=trial)["sst"].diff
        covered += diff.covers(4.0)
    assert covered >= 0.93 * 200


def planted(rng, fixes: int, breaks: int, n: int = 800, accuracy: float = 0.82):
    """Two SST-sized classifiers: b = a, except `fixes` of a's errors right and `breaks` of its hits wrong."""
    a = rng.random(n) < accuracy
    b = a.copy()
    b[rng.choice(np.flatnonzero(~a), fixes, replace=False)] = True
    b[rng.choice(np.flatnonzero(a), breaks, replace=False)] = False
    return a, b


@pytest.mark.parametrize("fixes, breaks, paper, expected", [(30, 6, +1.0, REPRODUCED), (18, 18, +1.0, INCONCLUSIVE)])
def test_a_planted_3_points_is_found_and_a_planted_0_is_inconclusive(fixes, breaks, paper, expected):
    """+3 points (24 net of 36 discordant examples, 4.5%) on 800 examples, and 0 (18 against 18)."""
    rng = np.random.default_rng(2)
    said = []
    for trial in range(200):
        a, b = planted(rng, fixes, breaks)
        diff = stats.compare({"sst": binary(a)}, {"sst": binary(b)}, replicates=400, seed=trial)["sst"].diff
        said.append(verdict(diff, paper))
    assert said.count(expected) >= 0.95 * 200


def test_bleu_bootstrap_matches_brute_force_recomputation():
    """Each replicate's BLEU equals sacrebleu's corpus BLEU of the resampled sentences, built one by one."""
    preds = ["the cat sat on the mat", "a dog ran", "hello world again", "big red house", "on the mat", "x y"]
    golds = [["the cat sat on a mat"], ["a dog ran away"], ["hello world"], ["the big red house"],
             ["on the mat", "upon the mat"], ["z"]]
    values = np.asarray(bleu.sentence_stats(preds, golds), dtype=float)
    assert metric_value("bleu", values) == pytest.approx(bleu.bleu(preds, golds), abs=1e-9)
    sample = Sample.of("bleu", values)
    weights = stats.resample_weights(np.random.default_rng(3), len(preds), 60)
    got = stats.replicate_values(sample, weights, np.ones((60, 1)))
    for w, value in zip(weights, got):
        idx = np.repeat(np.arange(len(preds)), w)
        brute = bleu.bleu([preds[i] for i in idx], [golds[i] for i in idx])
        assert value == pytest.approx(brute, abs=1e-9)
    assert len(set(np.round(got, 6))) > 10  # the resamples differ


def test_corpus_f1_is_recomputed_from_counts_not_averaged():
    preds, golds = ["paris", "unanswerable", "rome", "berlin"], [["paris"], ["london"], ["unanswerable"], ["berlin"]]
    values = example_stats("corpus_f1", preds, [{"answers": g} for g in golds])
    assert metric_value("corpus_f1", values) == pytest.approx(zre.corpus_f1(preds, golds)["corpus_f1"])


def test_decascore_interval_sums_independent_task_replicates():
    rng = np.random.default_rng(4)
    samples = {"sst": binary(rng.random(300) < 0.8), "schema": binary(rng.random(80) < 0.5)}
    out = stats.estimate(samples, replicates=800, seed=0)
    assert out["decascore"].value == pytest.approx(out["sst"].value + out["schema"].value)
    width = lambda i: i.high - i.low  # noqa: E731
    # independent tasks: the sum's spread is about the root of the sum of squares, not the sum
    assert width(out["decascore"]) < width(out["sst"]) + width(out["schema"])
    assert width(out["decascore"]) == pytest.approx(math.hypot(width(out["sst"]), width(out["schema"])), rel=0.2)


def test_seeds_widen_the_interval():
    """Runs of one configuration that disagree (seed spread) give a wider interval than one run."""
    rng = np.random.default_rng(5)
    runs = [rng.random(800) < p for p in (0.70, 0.78, 0.86)]
    one = stats.estimate({"sst": binary(runs[1])}, seed=0)["sst"]
    three = stats.estimate({"sst": Sample.of("mean", *[100.0 * r for r in runs])}, seed=0)["sst"]
    assert three.high - three.low > 2 * (one.high - one.low)


def test_paired_p_values_and_mcnemar_are_sane():
    rng = np.random.default_rng(6)
    a, b = planted(rng, 30, 6)
    found = stats.compare({"sst": binary(a)}, {"sst": binary(b)}, seed=0)["sst"]
    assert found.p < 0.01 and found.mcnemar < 0.001
    a, b = planted(rng, 18, 18)
    null = stats.compare({"sst": binary(a)}, {"sst": binary(b)}, seed=0)["sst"]
    assert null.p > 0.5 and null.mcnemar == 1.0
    assert stats.mcnemar([True] * 10, [False] * 10) == pytest.approx(2 * 0.5 ** 10)
    scipy_stats = pytest.importorskip("scipy.stats")
    x, y = planted(rng, 9, 3)
    expected = scipy_stats.binomtest(3, 12, 0.5).pvalue
    assert stats.mcnemar(x, y) == pytest.approx(expected)


def test_nf1_has_no_mcnemar_and_identical_runs_have_p_1():
    sample = Sample.of("mean", np.array([50.0, 100.0, 0.0, 66.7]))
    same = stats.compare({"srl": sample}, {"srl": sample}, replicates=200)["srl"]
    assert same.mcnemar is None and same.p == 1.0 and same.diff.low == same.diff.high == 0.0


def test_seed_difference_is_welch():
    diff = stats.seed_difference([80.0, 82.0], [85.0, 87.0])
    assert diff.value == 5.0 and diff.low == pytest.approx(5 - 4.303 * math.sqrt(2 / 2 + 2 / 2))
    assert stats.seed_difference([80.0], [85.0, 87.0]).low == -math.inf


def test_verdicts():
    assert verdict(Interval(2.0, 0.5, 3.5), +1.2) == REPRODUCED
    assert verdict(Interval(-2.0, -3.5, -0.5), +1.2) == OPPOSITE
    assert verdict(Interval(-2.0, -3.5, -0.5), -0.4) == REPRODUCED
    assert verdict(Interval(0.5, -0.5, 1.5), +1.2) == INCONCLUSIVE
    assert verdict(Interval(2.0, 0.5, 3.5), +1.2, floors=[False, True]) == NOT_TESTED
    assert verdict(Interval(2.0, 0.5, 3.5), +1.2, rising=[True, False]) == NOT_TESTED


def test_not_tested_at_the_floor_of_a_majority_baseline():
    """MWSC at 48 ± 11 against the ~50% of a random candidate: at the floor, whatever the difference says."""
    mwsc = Interval(48.0, 37.0, 59.0)
    assert at_floor(mwsc, 50.0) and at_floor(Interval(31.7, 22.0, 41.0), 50.0)
    assert not at_floor(Interval(81.7, 79.0, 84.4), 51.0) and not at_floor(mwsc, None)
    assert verdict(Interval(6.0, 1.0, 11.0), 4.0, floors=[at_floor(mwsc, 50.0), False]) == NOT_TESTED


def test_still_rising_over_the_last_third():
    assert still_rising([(0, 10), (300, 40), (600, 50), (700, 55), (800, 58), (900, 62)], budget=900)
    assert not still_rising([(0, 10), (300, 40), (600, 60), (700, 60.2), (800, 59.9), (900, 60.1)], budget=900)
    assert not still_rising([(100, 5)])


def test_a_wiggle_within_the_curves_scatter_or_back_to_an_earlier_level_is_not_a_rise():
    """A climb back to a level reached before the last third is not a rise, nor a gain within the scatter of the
    points about their line; a steady climb to new highs is one, however small the scatter about it."""
    assert still_rising([(0, 0), (200, 30), (400, 50.5), (600, 48.0), (700, 48.0), (800, 49.0), (900, 49.8)],
                        budget=900) is False  # back toward 50.5, no new high
    assert still_rising([(0, 0), (300, 40), (600, 44.9), (700, 45.8), (800, 46.3), (850, 46.2), (900, 46.9)],
                        budget=900) is True  # QA-SRL's still-rising seed 11 S2S curve, in shape
    scattered = [(0, 0), (300, 40), (600, 41), (700, 46), (800, 40), (850, 47), (900, 44)]
    assert still_rising(scattered, budget=900) is False  # gains ~2 points, but within +-3 of scatter
    assert still_rising(scattered, budget=900, alpha=1.0) is True  # the scatter alone said no


def test_the_bounds_of_the_replicates():
    """Enough resamples for the ends of a 95% interval (5 beyond each), no more than the memory allows."""
    assert stats.MIN_REPLICATES * (1 - stats.LEVEL) / 2 >= 5
    assert stats.MAX_REPLICATES * stats.REPLICATE_BYTES <= stats.REPLICATE_MEMORY
    for fine in (stats.MIN_REPLICATES, stats.REPLICATES, stats.MAX_REPLICATES):
        stats.check_replicates(fine, "--replicates")
    for bad in (0, 1, stats.MIN_REPLICATES - 1, stats.MAX_REPLICATES + 1):
        with pytest.raises(ConfigError, match=rf"^register.replicates = {bad}: must be between"):
            stats.check_replicates(bad, "register.replicates")


def test_student_t_tail_quantiles_and_welch_p_match_scipy():
    scipy_stats = pytest.importorskip("scipy.stats")
    for t, df in ((2.0, 3.0), (0.5, 1.0), (4.0, 1.7), (10.0, 30.0), (0.01, 5.0)):
        assert stats.t_two_sided_p(t, df) == pytest.approx(2 * scipy_stats.t.sf(t, df), rel=1e-9)
    for q, df in ((0.975, 2.0), (0.8, 3.0), (0.2, 5.5), (0.999, 1.0)):
        assert stats.t_quantile_at(q, df) == pytest.approx(scipy_stats.t.ppf(q, df), rel=1e-8)
    a, b = [80.0, 82.0, 81.0], [85.0, 87.0]
    assert stats.welch_p(a, b) == pytest.approx(scipy_stats.ttest_ind(b, a, equal_var=False).pvalue, rel=1e-9)
    assert stats.welch_p([80.0], b) == 1.0 and stats.welch_p([80.0, 80.0], [85.0, 85.0]) == 0.0
