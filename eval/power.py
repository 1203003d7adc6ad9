"""Correction and power: Holm-adjusted p-values over the steps of one table, and the minimum detectable
effect (MDE) of a design of seeds and clustered examples, with the seeds or clusters a target effect needs.

Twelve steps judged at 5% each give 1 - 0.95^12, about 46%, chance of at least one false call; Holm's
step-down adjustment (Holm 1979) holds that family-wise rate at 5% and is uniformly more powerful than
Bonferroni's. The MDE of a two-sided test at level alpha with power 1 - beta is (z_{1-alpha/2} + z_{1-beta})
times the standard error of the difference (Bloom 1995, "Minimum detectable effects", eq. 1); with a handful
of seeds the t quantiles of the design's degrees of freedom replace the z's.

The standard error comes from the clustered two-level design (eval/clustered.py): a score y[s, i] of seed s
on example i of cluster c is mu + u_s + w_c + x_i + e_si, seeds crossed with the examples, the examples nested
in their clusters. The variance of a side's mean (or of a paired difference b - a of means over the same
examples, the components then summed over both sides and the example effects of the difference) over S seeds
a side and N examples in C clusters of m is

    seed / S + between / C + within / N + residual / (S N)

(the variance of a mean under a crossed and nested random-effects model: Searle, Casella & McCulloch 1992,
ch. 4 and 5). `components` estimates the four by the method of moments (one-way ANOVA of the example effects
by cluster; the seed x example residual from the two-way table); with a single run the seed variance cannot be
seen and is 0, and the residual is counted in the example level.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Hashable, Sequence

import numpy as np

from eval.clustered import cluster_codes
from eval.stats import t_quantile_at

ALPHA = 0.05
POWER = 0.8


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979), in the order given: the i-th smallest of m becomes
    max_{j <= i} min(1, (m - j + 1) p_(j)); a step is significant at alpha when its adjusted p is under it."""
    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return []
    if np.any((p < 0) | (p > 1) | np.isnan(p)):
        raise ValueError(f"p-values must lie in [0, 1], got {list(pvalues)}")
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(p)
    out[order] = np.minimum(1.0, stepped)
    return [float(x) for x in out]


def mde(se: float, alpha: float = ALPHA, power: float = POWER, df: float | None = None) -> float:
    """The minimum detectable effect (Bloom 1995): (q_{1-alpha/2} + q_{power}) * se, q the normal's quantiles,
    or Student's t with `df` degrees of freedom when given (few seeds), rounded down as the intervals'
    eval.stats.t_quantile rounds them: an MDE is then never less than the interval it is judged with can see."""
    if df is None or math.isinf(df):
        return (NormalDist().inv_cdf(1 - alpha / 2) + NormalDist().inv_cdf(power)) * se
    df = max(1, math.floor(df))
    return (t_quantile_at(1 - alpha / 2, df) + t_quantile_at(power, df)) * se


def se_of(interval, level: float = 1.0 - ALPHA) -> float:
    """The standard error a symmetric normal interval of `level` implies, (high - low) / (2 z_{(1+level)/2}):
    for an MDE from an interval whose replicates are gone (eg the promotion gate's rows)."""
    return (interval.high - interval.low) / (2.0 * NormalDist().inv_cdf((1.0 + level) / 2.0))


def underpowered(detectable: float, effect: float) -> bool:
    """Whether a design's MDE exceeds the paper's effect (its size): the design could not see it."""
    return detectable > abs(effect)


@dataclass(frozen=True)
class Components:
    """Variance components (squared points) of a mean or a paired difference of means: per seed, per cluster,
    per example within a cluster, and the seed x example residual."""

    seed: float
    between: float
    within: float
    residual: float

    def variance(self, seeds: float, clusters: float, examples: float) -> float:
        """The variance of the mean over `seeds` a side and `examples` in `clusters` (module docstring; at least
        0 where a negative `between` outweighs the rest)."""
        return max(0.0, self.seed / seeds + self.between / clusters + self.within / examples
                   + self.residual / (seeds * examples))


    def se(self, seeds: float, clusters: float, examples: float) -> float:
        return math.sqrt(self.variance(seeds, clusters, examples))

    def mde(self, seeds: float, clusters: float, examples: float, alpha: float = ALPHA,
            power: float = POWER) -> float:
        return mde(self.se(seeds, clusters, examples), alpha, power)


def effective_clusters(clusters: Sequence[Hashable] | None, n: int) -> float:
    """N^2 / sum of m_c^2: the count of equal clusters whose mean varies as these unequal ones' does."""
    sizes = np.bincount(cluster_codes(clusters, n))
    return float(n * n / np.sum(sizes.astype(float) ** 2))


def _two_way(scores: np.ndarray) -> tuple[float, float]:
    """(seed variance, residual variance) of one side's (runs, examples) scores; (0, 0) for a single run."""
    runs, n = scores.shape
    if runs < 2:
        return 0.0, 0.0
    resid = scores - scores.mean(axis=1, keepdims=True) - scores.mean(axis=0, keepdims=True) + scores.mean()
    residual = float(np.sum(resid ** 2) / ((runs - 1) * max(n - 1, 1)))
    return max(0.0, float(scores.mean(axis=1).var(ddof=1)) - residual / n), residual


def components(a: np.ndarray, b: np.ndarray | None = None,
               clusters: Sequence[Hashable] | None = None) -> Components:
    """The variance components of side a's mean (b None) or of the paired difference b - a, from per-example
    scores (runs, examples) of a metric averaged over examples, over the same examples (method of moments)."""
    sides = [np.asarray(a, dtype=float)] + ([] if b is None else [np.asarray(b, dtype=float)])
    n = sides[0].shape[1]
    parts = [_two_way(s) for s in sides]
    noise = sum(r / s.shape[0] for (_, r), s in zip(parts, sides))  # the residual in an example's mean
    effect = sides[0].mean(axis=0) if b is None else sides[1].mean(axis=0) - sides[0].mean(axis=0)
    codes = cluster_codes(clusters, n)
    count, sizes = int(codes.max()) + 1, np.bincount(codes).astype(float)
    means = np.bincount(codes, weights=effect) / sizes
    if count == n or count < 2:  # singletons (or one cluster): the example level holds it all
        between, within = 0.0, max(0.0, float(effect.var(ddof=1)) - noise) if n > 1 else 0.0
    else:
        msb = float(np.sum(sizes * (means - effect.mean()) ** 2) / (count - 1))
        msw = float(np.sum((effect - means[codes]) ** 2) / (n - count))
        m0 = (n - np.sum(sizes ** 2) / n) / (count - 1)
        between, within = (msb - msw) / m0, max(0.0, msw - noise)  # between < 0: clusters whose examples err
        # in opposite directions (an MWSC schema's two sentences have opposite answers) vary less than their
        # examples do; cut at 0 it would overstate the noise of a mean (the sum stays >= 0: `variance`)
    return Components(sum(s for s, _ in parts), between, within, sum(r for _, r in parts))


def examples_variance(a: np.ndarray, b: np.ndarray | None = None,
                      clusters: Sequence[Hashable] | None = None) -> float:
    """The examples' part of the variance of side a's mean (b None) or of the paired difference b - a of means,
    from per-example scores (runs, examples): the part no count of seeds lowers. On the clusters' totals (each
    example its own cluster without ids), scaled so that their mean is the examples' mean: the variance over
    clusters of the seed-averaged total (or difference of totals), less the seed x cluster residual that the
    seeds leave in it (`_two_way`'s residual / S per side), over the count of clusters. Where a cluster's examples
    err in opposite directions (an MWSC schema's two sentences) their effects and their seed noise both cancel in
    the totals, as they do in a mean; estimated example by example (`components`), the noise would not."""
    sides = [np.asarray(a, dtype=float)] + ([] if b is None else [np.asarray(b, dtype=float)])
    n = sides[0].shape[1]
    codes = cluster_codes(clusters, n)
    count = int(codes.max()) + 1
    if count < 2:
        return 0.0
    totals = [np.stack([np.bincount(codes, weights=row, minlength=count) for row in s]) * count / n for s in sides]
    noise = sum(_two_way(t)[1] / t.shape[0] for t in totals)
    effect = totals[0].mean(axis=0) if b is None else totals[1].mean(axis=0) - totals[0].mean(axis=0)
    return max(0.0, float(effect.var(ddof=1)) - noise) / count


def _target_variance(effect: float, alpha: float, power: float) -> float:
    return (abs(effect) / mde(1.0, alpha, power)) ** 2


def seeds_needed(parts: Components, effect: float, clusters: float, examples: float, alpha: float = ALPHA,
                 power: float = POWER) -> int | None:
    """The fewest seeds a side whose MDE is at most `effect` on these examples; None when no count of seeds
    reaches it (the examples alone vary more)."""
    room = _target_variance(effect, alpha, power) - parts.between / clusters - parts.within / examples
    if room <= 0:
        return None
    return max(1, math.ceil((parts.seed + parts.residual / examples) / room))


def clusters_needed(parts: Components, effect: float, seeds: float, per_cluster: float = 1.0,
                    alpha: float = ALPHA, power: float = POWER) -> int | None:
    """The fewest clusters of `per_cluster` examples whose MDE with `seeds` a side is at most `effect`; None
    when no count of examples reaches it (the seeds alone vary more)."""
    room = _target_variance(effect, alpha, power) - parts.seed / seeds
    if room <= 0:
        return None
    per = max(0.0, parts.between + (parts.within + parts.residual / seeds) / per_cluster)
    return max(1, math.ceil(per / room))
