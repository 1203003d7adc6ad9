"""The clustered two-level bootstrap: intervals over the seeds and the examples, the examples resampled by
the context they share.

Many tasks ask several questions of one context (SQuAD about five a paragraph, QA-SRL several a sentence,
WOZ the turns of one dialogue); their errors are correlated, and resampling the examples one by one
understates the error (Miller 2024, "Adding error bars to evals", sec. 2.3, the clustered standard error;
Cameron & Miller 2015). A replicate resamples the runs (seeds) with replacement, as eval.stats does, and the
clusters with replacement, each drawn cluster bringing all its examples (Davison & Hinkley 1997, sec. 3.8,
resampling the top stage; seeds and examples are crossed, so the two are resampled independently: Owen 2007,
"The pigeonhole bootstrap", which is conservative). The metric of a replicate is recomputed from the summed
statistics of the drawn examples over their count (eval.examples.metric_from_sums). A paired comparison draws
the same clusters for both sides: they share their examples. Without cluster ids every example is its own
cluster (eval.stats's resampling). A side of a single run has no seed level to resample: its interval is
over the examples alone.

With a handful of seeds the percentile interval is too narrow on two counts: resampling S runs with replacement
sees (S - 1) / S of their variance, and its quantiles are the normal's where the seed level has S - 1 degrees of
freedom. `few_seeds` corrects both: the seeds' variance of the mean from the runs' own metrics (unbiased), the
degrees of freedom of the sum of the seed and example parts by Welch-Satterthwaite, and the percentile interval
widened about its point by t / z and the standard errors' ratio (so it keeps its asymmetry); a difference's
p-value is then Student's t at those degrees of freedom, as its interval is.

Runs whose per-example statistics are gone get eval.stats's interval over the seeds alone, labelled
`SEED_ONLY` so that no page passes it off as the two-level interval; runs that all agree get an unbounded one
(two identical seeds show no spread, which is not evidence of no noise).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Hashable, Sequence

import numpy as np

from eval.examples import metric_from_sums
from eval.stats import (LEVEL, REPLICATES, Interval, Sample, bootstrap_p, percentile_interval,
                        paired_replicates, seed_difference, seed_interval, seed_weights, t_quantile_at,
                        t_two_sided_p, welch_p)

CLUSTERED = "clustered two-level bootstrap"
TWO_LEVEL = "two-level bootstrap"  # no shared contexts: every example its own cluster
SEED_ONLY = "seed-only interval"
METHODS = (CLUSTERED, TWO_LEVEL, SEED_ONLY)


@dataclass(frozen=True)
class Estimate:
    """An interval with how it was made: `p` the two-sided p-value of "the difference is 0" (None for one
    side's mean), `se` the standard error (the seeds' and the examples' parts: `few_seeds`; the t test's for
    `SEED_ONLY`), `method` one of METHODS, `df` the degrees of freedom of `se` (inf: no seed level, many
    clusters; None: unbounded)."""

    interval: Interval
    p: float | None
    se: float
    method: str
    df: float | None = None


def cluster_codes(clusters: Sequence[Hashable] | None, n: int) -> np.ndarray:
    """Codes 0..C-1 of each example's cluster id (a paragraph, a sentence, a dialogue), in order of first
    appearance; None: every example its own cluster."""
    if clusters is None:
        return np.arange(n)
    if len(clusters) != n:
        raise ValueError(f"{len(clusters)} cluster ids for {n} examples")
    seen: dict[Hashable, int] = {}
    return np.asarray([seen.setdefault(c, len(seen)) for c in clusters], dtype=int)


def context_clusters(task: str, ids: Sequence[str], contexts: Sequence[str]) -> list[str] | None:
    """Each example's cluster as `deca evaluate`'s records give it: for WOZ the dialogue of its id
    (``<lang>_<dialogue>_<turn>``: the turns of one dialogue differ in context), for MWSC the schema of its id
    (``schema<k>-<choice>``: the two questions of a schema differ in context), for SST none (independent
    sentences), for any other task its context text (SQuAD's paragraph, QA-SRL's sentence); None when no two
    examples share one."""
    if task.startswith("sst"):
        return None
    if task.startswith("woz"):
        found = [i.rsplit("_", 1)[0] for i in ids]
    elif task == "schema":
        found = [i.rsplit("-", 1)[0] for i in ids]
    else:
        found = [str(c) for c in contexts]
    return found if len(set(found)) < len(found) else None


def cluster_unit(task: str) -> str:
    """What a cluster of `task` is, in a page's words (`context_clusters`)."""
    if task.startswith("woz"):
        return "dialogue"
    if task == "schema":
        return "schema"
    return {"srl": "sentence"}.get(task, "paragraph" if "squad" in task else "context")


def cluster_weights(rng: np.random.Generator, codes: np.ndarray, size: int) -> np.ndarray:
    """(size, n) counts: how often each example is drawn when resample i draws its clusters with replacement
    (an example counts as often as its cluster is drawn)."""
    count = int(codes.max()) + 1
    draws = rng.integers(0, count, size=(size, count)) + count * np.arange(size)[:, None]
    per_cluster = np.bincount(draws.ravel(), minlength=size * count).reshape(size, count)
    return per_cluster[:, codes].astype(float)


def replicate_values(sample: Sample, weights: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The metric of each resample, example `weights` (B, n) and run counts `seeds` (B, runs) -> (B,): the
    drawn examples' summed statistics over their count (clusters differ in size)."""
    sums = np.einsum("bn,rnk->brk", weights, sample.values)
    per_run = metric_from_sums(sample.kind, sums, weights.sum(axis=1)[:, None])
    return (per_run * seeds).sum(axis=1) / sample.runs


def clustered_replicates(samples: Sequence[Sample], codes: np.ndarray, replicates: int, rng: np.random.Generator,
                         seeds: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Replicates of each sample's metric under the same cluster resamples (the samples share their examples
    and so their clusters `codes`); `seeds[i]` are sample i's run counts (replicates, runs)."""
    return paired_replicates(samples, replicates, rng, seeds, draw=lambda gen, size: cluster_weights(gen, codes, size),
                             values=replicate_values)


def seed_part(sample: Sample) -> tuple[float, int]:
    """(the seeds' variance of the side's mean, its degrees of freedom S - 1): the runs' metrics on all examples,
    their unbiased variance over S; (0, 0) for a single run, which has no seed level."""
    if sample.runs < 2:
        return 0.0, 0
    per_run = metric_from_sums(sample.kind, sample.values.sum(axis=1), sample.n)
    return float(np.var(per_run, ddof=1)) / sample.runs, sample.runs - 1


def few_seeds(point: float, reps: np.ndarray, samples: Sequence[Sample], clusters: int,
              level: float) -> tuple[Interval, float, float]:
    """(the interval, the standard error, the degrees of freedom) of a two-level estimate over `samples` (one
    side, or the two of a difference) from its bootstrap replicates `reps`, corrected for few seeds (module
    docstring): the seeds' part from their own spread, the examples' part what the replicates hold beyond the
    seeds' share they saw, t quantiles at the parts' Welch-Satterthwaite degrees of freedom. The interval stays
    within what the metric (0..100) allows: a side's in [0, 100], a difference's in [-100, 100]."""
    boot = float(reps.var(ddof=1)) if len(reps) > 1 else 0.0
    parts = [seed_part(s) for s in samples]
    seen = sum(v * d / (d + 1) for v, d in parts if d)  # what resampling S runs sees of their variance
    examples = max(0.0, boot - seen)
    total = examples + sum(v for v, d in parts if d)
    shares = sum(v * v / d for v, d in parts if d) + (examples ** 2 / (clusters - 1) if clusters > 1 else 0.0)
    df = total ** 2 / shares if shares > 0 else math.inf
    found = percentile_interval(point, reps, level)
    if boot <= 0 or total <= 0:
        return found, math.sqrt(max(total, 0.0)), df
    q = 0.5 + level / 2.0
    k = math.sqrt(total / boot) * (1.0 if math.isinf(df) else
                                   t_quantile_at(q, max(1, math.floor(df))) / NormalDist().inv_cdf(q))
    top = 100.0
    bottom = 0.0 if len(samples) == 1 else -top
    low, high = max(bottom, point - (point - found.low) * k), min(top, point + (found.high - point) * k)
    return Interval(point, low, high), math.sqrt(total), df


def _method(clusters) -> str:
    return TWO_LEVEL if clusters is None else CLUSTERED


def side(sample: Sample | None, clusters: Sequence[Hashable] | None = None, *, seed_values: Sequence[float] = (),
         replicates: int = REPLICATES, seed: int = 0, level: float = LEVEL) -> Estimate:
    """One side's metric with its two-level interval (clustered when `clusters` gives each example's
    context); without per-example statistics (`sample` None) the t interval of its runs' `seed_values`
    (eval.stats.seed_interval), labelled SEED_ONLY."""
    if sample is None:
        x = np.asarray(seed_values, dtype=float)
        if len(x) < 2 or x.std() == 0:  # runs that agree show no spread, not the absence of noise
            return Estimate(Interval(float(x.mean()), -math.inf, math.inf), None, math.inf, SEED_ONLY)
        return Estimate(seed_interval(x), None, float(x.std(ddof=1) / math.sqrt(len(x))), SEED_ONLY, len(x) - 1.0)
    run_rng, example_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    seeds = [seed_weights(run_rng, sample.runs, replicates)]
    codes = cluster_codes(clusters, sample.n)
    reps = clustered_replicates([sample], codes, replicates, example_rng, seeds)[0]
    found, se, df = few_seeds(sample.point(), reps, [sample], int(codes.max()) + 1, level)
    return Estimate(found, None, se, _method(clusters), df)


def _seed_only_difference(a: Sequence[float], b: Sequence[float]) -> Estimate:
    """Welch's interval, p-value, standard error and degrees of freedom of mean(b) - mean(a) over runs
    (Welch 1947)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if min(len(x), len(y)) < 2 or x.std() + y.std() == 0:  # no spread seen: unbounded, as eval.stats for one run
        return Estimate(Interval(float(y.mean() - x.mean()), -math.inf, math.inf), 1.0, math.inf, SEED_ONLY)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    return Estimate(seed_difference(x, y), welch_p(x, y), math.sqrt(vx + vy), SEED_ONLY, df)


def difference(a: Sample | None, b: Sample | None, clusters: Sequence[Hashable] | None = None, *,
               seed_values: tuple[Sequence[float], Sequence[float]] = ((), ()), replicates: int = REPLICATES,
               seed: int = 0, level: float = LEVEL) -> Estimate:
    """b - a with its paired two-level interval and bootstrap p-value (the same clusters drawn for both
    sides, each side's seeds resampled on their own); when either side lacks per-example statistics,
    Welch's interval and p-value over `seed_values` (a's runs, b's runs), labelled SEED_ONLY."""
    if a is None or b is None:
        return _seed_only_difference(*seed_values)
    run_rng, example_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    seeds = [seed_weights(run_rng, a.runs, replicates), seed_weights(run_rng, b.runs, replicates)]
    codes = cluster_codes(clusters, a.n)
    reps = clustered_replicates([a, b], codes, replicates, example_rng, seeds)
    delta, point = reps[1] - reps[0], b.point() - a.point()
    found, se, df = few_seeds(point, delta, [a, b], int(codes.max()) + 1, level)
    p = t_two_sided_p(abs(point) / se, df) if se > 0 and math.isfinite(df) else bootstrap_p(delta)
    return Estimate(found, p, se, _method(clusters), df)
