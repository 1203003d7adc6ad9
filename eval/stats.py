"""The project's statistics: bootstrap intervals of headline metrics and the decaScore, paired differences
with p-values, McNemar's test, and intervals from seeds alone. Every reported interval comes from here.

A `Sample` holds one task's per-example statistics (eval.examples) for the runs of one configuration:
values of shape (runs, examples, columns). A bootstrap replicate resamples the runs (seeds) with replacement,
then the examples, and recomputes the metric from the resampled statistics' sums (`metric_from_sums`: corpus
BLEU and corpus F1 are recomputed, never averaged per example); with several runs the replicate is the mean
over the resampled runs, so the interval covers both levels. The decaScore's replicate is the sum of its
tasks' replicates, each task resampled independently (the runs once for all tasks: a run scores them all).
A paired comparison applies the same example resamples to both sides. Intervals are percentile intervals;
everything is seeded, so a report is reproducible.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from deca.errors import ConfigError
from deca.registry import DECANLP
from eval.examples import metric_from_sums

LEVEL = 0.95
REPLICATES = 1000
CHUNK_ELEMENTS = 2_000_000  # resample counts held at once (replicates x examples)
# The bounds of a number of resamples (`check_replicates`: --replicates of `deca compare`, register.replicates).
# Below: a percentile interval's end is an order statistic, so each 2.5% tail needs a few resamples (5 at 200);
# with one resample the "interval" is that resample and need not contain the estimate.
MIN_REPLICATES = 200
# Above: memory. The resample matrix is chunked (CHUNK_ELEMENTS), but `compare` holds float64 vectors of one value
# per resample: each side's run counts (a column per run), the decaScore's running totals, a task's replicates,
# their difference and the sorted copy a percentile takes; about 16 of them with a few runs a side (measured:
# ~65 bytes a resample with one run a side, ~100 with three; 100,000,000 resamples reached 3 GB in 14 s). 128 MiB
# of them allow a million, past where more resamples move an interval's ends by a visible digit.
REPLICATE_BYTES = 8 * 16
REPLICATE_MEMORY = 128 * 2**20
MAX_REPLICATES = REPLICATE_MEMORY // REPLICATE_BYTES
# Student's t, 0.975 quantile, 1..30 degrees of freedom (95% two-sided); the normal's 1.96 beyond.
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)


def check_replicates(value: int, key: str) -> None:
    """ConfigError naming `key` (an option like --replicates, or a params key) unless `value` is within
    MIN_REPLICATES..MAX_REPLICATES."""
    if not MIN_REPLICATES <= value <= MAX_REPLICATES:
        given = f"{key} {value}" if key.startswith("--") else f"{key} = {value}"
        raise ConfigError(f"{given}: must be between {MIN_REPLICATES} (enough resamples for the ends of a 95% "
                          f"interval) and {MAX_REPLICATES:,} (what the resamples may take in memory)")


@dataclass(frozen=True)
class Sample:
    """One task's per-example statistics for the runs of one configuration: `values` (runs, examples, columns)."""

    kind: str
    values: np.ndarray

    @classmethod
    def of(cls, kind: str, *runs: np.ndarray) -> "Sample":
        """A sample from one (examples x columns) matrix per run, all over the same examples."""
        values = np.stack([np.asarray(r, dtype=float).reshape(len(r), -1) for r in runs])
        return cls(kind, values)

    @property
    def runs(self) -> int:
        return self.values.shape[0]

    @property
    def n(self) -> int:
        return self.values.shape[1]

    def point(self) -> float:
        """The metric on all examples, averaged over the runs."""
        return float(np.mean(metric_from_sums(self.kind, self.values.sum(axis=1), self.n)))


@dataclass(frozen=True)
class Interval:
    """An estimate and its interval."""

    value: float
    low: float
    high: float

    def covers(self, x: float) -> bool:
        return self.low <= x <= self.high

    def to_json(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high}


@dataclass(frozen=True)
class Difference:
    """side b minus side a, with its interval, the paired-bootstrap p-value, McNemar's p-value (exact-match
    tasks, one run a side; else None) and each side's own interval."""

    diff: Interval
    p: float
    mcnemar: float | None
    a: Interval
    b: Interval


def resample_weights(rng: np.random.Generator, n: int, size: int) -> np.ndarray:
    """(size, n) counts: row i says how often each of n examples is drawn in bootstrap resample i."""
    draws = rng.integers(0, n, size=(size, n)) + n * np.arange(size)[:, None]
    return np.bincount(draws.ravel(), minlength=size * n).reshape(size, n)


def seed_weights(rng: np.random.Generator, runs: int, size: int) -> np.ndarray:
    """(size, runs) counts of a resample of the runs with replacement (all ones for a single run)."""
    if runs == 1:
        return np.ones((size, 1))
    return rng.multinomial(runs, np.full(runs, 1.0 / runs), size=size).astype(float)


def replicate_values(sample: Sample, weights: np.ndarray, seeds: np.ndarray) -> np.ndarray:
    """The metric of each resample: example `weights` (B, n), run counts `seeds` (B, runs) -> (B,)."""
    sums = np.einsum("bn,rnk->brk", weights.astype(float), sample.values)
    per_run = metric_from_sums(sample.kind, sums, sample.n)
    return (per_run * seeds).sum(axis=1) / sample.runs


def paired_replicates(samples: Sequence[Sample], replicates: int, rng: np.random.Generator,
                      seeds: Sequence[np.ndarray], draw=None, values=None) -> list[np.ndarray]:
    """Replicates of each sample's metric under the same example resamples (the samples share their
    examples); `seeds[i]` are sample i's run counts (replicates, runs). `draw(rng, size)` gives the resample
    weights (size, n) and `values(sample, weights, seeds)` the metric of each: by default examples drawn with
    replacement (`replicate_values`; eval.clustered draws whole clusters, of different sizes)."""
    n = samples[0].n
    if any(s.n != n for s in samples):
        raise ValueError(f"paired samples must share their {n} examples, got sizes {[s.n for s in samples]}")
    draw = draw or (lambda generator, size: resample_weights(generator, n, size))
    values = values or replicate_values
    chunk = max(1, CHUNK_ELEMENTS // max(n, 1))
    out: list[list[np.ndarray]] = [[] for _ in samples]
    for start in range(0, replicates, chunk):
        weights = draw(rng, min(chunk, replicates - start))
        for i, sample in enumerate(samples):
            out[i].append(values(sample, weights, seeds[i][start:start + len(weights)]))
    return [np.concatenate(parts) for parts in out]


def percentile_interval(value: float, replicates: np.ndarray, level: float = LEVEL) -> Interval:
    """`value` with the percentile interval of its bootstrap replicates."""
    tail = 100.0 * (1.0 - level) / 2.0
    low, high = np.percentile(replicates, [tail, 100.0 - tail])
    return Interval(float(value), float(low), float(high))


def bootstrap_p(replicates: np.ndarray) -> float:
    """Two-sided bootstrap p-value of "the difference is 0": twice the smaller share of replicates on either
    side of 0 (counting 0 on both), with the +1 correction."""
    b = len(replicates)
    below = (1 + np.count_nonzero(replicates <= 0)) / (b + 1)
    above = (1 + np.count_nonzero(replicates >= 0)) / (b + 1)
    return float(min(1.0, 2.0 * min(below, above)))


def _streams(seed: int, tasks: Sequence[str]) -> tuple[np.random.Generator, dict[str, np.random.Generator]]:
    """One generator for the runs and one per task (by sorted name: the same whatever the order given)."""
    names = sorted(tasks)
    children = np.random.SeedSequence(seed).spawn(len(names) + 1)
    return np.random.default_rng(children[0]), {t: np.random.default_rng(c) for t, c in zip(names, children[1:])}


def _runs(groups: Sequence[Mapping[str, Sample]]) -> list[int]:
    counts = []
    for group in groups:
        found = {s.runs for s in group.values()}
        if len(found) != 1:
            raise ValueError(f"every task of a group needs the same runs, got run counts {sorted(found)}")
        counts.append(found.pop())
    return counts


def estimate(samples: Mapping[str, Sample], replicates: int = REPLICATES, seed: int = 0,
             level: float = LEVEL) -> dict[str, Interval]:
    """Per task its metric and interval, and ``decascore`` (sum over the decaNLP tasks present) when any."""
    return {k: v.a for k, v in compare(samples, samples, replicates, seed, level).items()}


def compare(a: Mapping[str, Sample], b: Mapping[str, Sample], replicates: int = REPLICATES, seed: int = 0,
            level: float = LEVEL) -> dict[str, Difference]:
    """b minus a per task they share, and ``decascore`` over the decaNLP tasks both have (paired bootstrap)."""
    tasks = [t for t in a if t in b]
    if not tasks:
        raise ValueError("the two sides share no task")
    runs_a, runs_b = _runs([{t: a[t] for t in tasks}, {t: b[t] for t in tasks}])
    run_rng, task_rngs = _streams(seed, tasks)
    seeds = [seed_weights(run_rng, runs_a, replicates), seed_weights(run_rng, runs_b, replicates)]
    out, totals = {}, [np.zeros(replicates), np.zeros(replicates)]
    for task in tasks:
        reps = paired_replicates([a[task], b[task]], replicates, task_rngs[task], seeds)
        points = [a[task].point(), b[task].point()]
        out[task] = _difference(points, reps, level, mcnemar_of(a[task], b[task]))
        if task in DECANLP:
            totals = [totals[0] + reps[0], totals[1] + reps[1]]
    summed = [t for t in tasks if t in DECANLP]
    if summed:
        points = [sum(a[t].point() for t in summed), sum(b[t].point() for t in summed)]
        out["decascore"] = _difference(points, totals, level, None)
    return out


def _difference(points: Sequence[float], reps: Sequence[np.ndarray], level: float, mcnemar: float | None) -> Difference:
    delta = reps[1] - reps[0]
    return Difference(percentile_interval(points[1] - points[0], delta, level), bootstrap_p(delta), mcnemar,
                      percentile_interval(points[0], reps[0], level), percentile_interval(points[1], reps[1], level))


def mcnemar_of(a: Sample, b: Sample) -> float | None:
    """McNemar's p-value when both sides are one run of an exact-match metric (every score 0 or 100)."""
    if a.kind != "mean" or a.runs != 1 or b.runs != 1:
        return None
    x, y = a.values[0, :, 0], b.values[0, :, 0]
    if not (np.isin(x, (0.0, 100.0)).all() and np.isin(y, (0.0, 100.0)).all()):
        return None
    return mcnemar(x > 0, y > 0)


def mcnemar(a_correct: Sequence[bool], b_correct: Sequence[bool]) -> float:
    """Exact two-sided McNemar p-value: the discordant pairs against Binomial(b + c, 1/2)."""
    x, y = np.asarray(a_correct, dtype=bool), np.asarray(b_correct, dtype=bool)
    only_a, only_b = int(np.count_nonzero(x & ~y)), int(np.count_nonzero(~x & y))
    n, k = only_a + only_b, min(only_a, only_b)
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(k + 1))
    return float(min(1.0, 2 * tail / 2 ** n))


def t_quantile(df: float) -> float:
    """The 0.975 quantile of Student's t with `df` degrees of freedom (rounded down: conservative)."""
    k = max(1, int(math.floor(df)))
    return T975[k - 1] if k <= len(T975) else 1.96


def seed_interval(values: Sequence[float]) -> Interval:
    """Mean of one configuration's runs with its 95% t interval (unbounded for a single run)."""
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if len(x) < 2:
        return Interval(mean, -math.inf, math.inf)
    half = t_quantile(len(x) - 1) * float(x.std(ddof=1)) / math.sqrt(len(x))
    return Interval(mean, mean - half, mean + half)


def seed_difference(a: Sequence[float], b: Sequence[float]) -> Interval:
    """mean(b) - mean(a) over runs (seeds) alone, with Welch's 95% interval (unbounded with a single run on
    a side): for tables whose runs kept no per-example statistics."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    diff = float(y.mean() - x.mean())
    if len(x) < 2 or len(y) < 2:
        return Interval(diff, -math.inf, math.inf)
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    se = math.sqrt(vx + vy)
    if se == 0:
        return Interval(diff, diff, diff)
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    return Interval(diff, diff - t_quantile(df) * se, diff + t_quantile(df) * se)


def _beta_fraction(x: float, a: float, b: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz; Numerical Recipes, 3rd ed.,
    eq. 6.4.5 and sec. 5.2)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def incomplete_beta(x: float, a: float, b: float) -> float:
    """The regularized incomplete beta function I_x(a, b) (Numerical Recipes, 3rd ed., eq. 6.4.1)."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(x, a, b) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(1.0 - x, b, a) / b


def t_two_sided_p(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with `df` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    if math.isinf(t):
        return 0.0
    return float(min(1.0, incomplete_beta(df / (df + t * t), df / 2.0, 0.5)))


def t_quantile_at(q: float, df: float) -> float:
    """The `q` quantile (0 < q < 1) of Student's t with `df` degrees of freedom, by bisection on its tail."""
    if q == 0.5:
        return 0.0
    upper = 1.0 - q if q > 0.5 else q  # one tail
    low, high = 0.0, 1e6
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if t_two_sided_p(mid, df) / 2.0 > upper else (low, mid)
    return (low + high) / 2.0 if q > 0.5 else -(low + high) / 2.0


def welch_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of Welch's t test of mean(b) = mean(a) over runs (seeds) alone (Welch 1947): the
    p-value of `seed_difference`'s interval. 1.0 with a single run a side; 1.0 or 0.0 when the runs agree."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) < 2 or len(y) < 2:
        return 1.0
    vx, vy = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    diff = float(y.mean() - x.mean())
    if vx + vy == 0:
        return 1.0 if diff == 0 else 0.0
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    return t_two_sided_p(diff / math.sqrt(vx + vy), df)
