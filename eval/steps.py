"""The steps of one table judged together: each step's change with its clustered two-level interval (or the
seed-only one, labelled, where the runs kept no per-example statistics: eval/clustered.py), Holm's adjusted
p-value over the table's steps and the step's minimum detectable effect (eval/power.py), each side against its
floor, and eval/verdict.py's verdict on all of it. Every step ends as reproduced, opposite, fails, not tested,
inconclusive (powered: its MDE at most the paper's change) or underpowered (`note` gives both numbers).

The family Holm adjusts over is every step given, not-tested ones included: which steps count cannot depend
on the results. The MDE is at 80% power and the table's level (eval.power), from the change's standard error:
the clustered bootstrap's replicate sd, or Welch's with t quantiles of its degrees of freedom for seed-only
steps (a single run a side: unbounded, so any interval covering 0 is underpowered).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Hashable, Sequence

from eval import clustered, power
from eval.clustered import Estimate
from eval.stats import LEVEL, REPLICATES, Sample
from eval.verdict import FAILS, UNDERPOWERED, at_floor, below_floor, power_note, verdict


@dataclass(frozen=True)
class Step:
    """One comparison of a table: side a to side b (per-example statistics, or None where the runs kept none,
    then `seed_values` (a's runs' scores, b's runs' scores)), the paper's change b - a, each example's
    cluster, the task's floor (eval.verdict.baseline) and per side whether its curve was still rising (None:
    unknown, read by eval.verdict as not rising)."""

    name: str
    paper: float
    a: Sample | None = None
    b: Sample | None = None
    seed_values: tuple[Sequence[float], Sequence[float]] = ((), ())
    clusters: Sequence[Hashable] | None = None
    floor: float | None = None
    rising: Sequence[bool | None] = ()


@dataclass(frozen=True)
class Judged:
    """A step's change, its sides, Holm's adjusted p-value, its MDE and the verdict."""

    step: Step
    change: Estimate
    sides: tuple[Estimate, Estimate]
    adjusted_p: float
    mde: float
    verdict: str

    def note(self) -> str:
        """Why, in the page's words: the MDE against the paper's change when underpowered, the floor when the
        step fails, and the seed-only label where the interval is over the seeds alone."""
        said = []
        if self.verdict == UNDERPOWERED:
            said.append(power_note(self.mde, self.step.paper))
        if self.verdict == FAILS:
            said.append(f"a side's interval lies wholly below the {self.step.floor:.1f} floor")
        if self.change.method == clustered.SEED_ONLY:
            said.append(clustered.SEED_ONLY)
        return "; ".join(said)


def _sides(step: Step, replicates: int, seed: int, level: float) -> tuple[Estimate, Estimate]:
    return tuple(clustered.side(sample, step.clusters, seed_values=values, replicates=replicates, seed=seed,
                                level=level) for sample, values in zip((step.a, step.b), step.seed_values))


def _mde(change: Estimate, level: float) -> float:
    if math.isinf(change.se):
        return math.inf
    return power.mde(change.se, 1.0 - level, power.POWER, df=change.df)


def judge_steps(steps: Sequence[Step], replicates: int = REPLICATES, seed: int = 0,
                level: float = LEVEL) -> list[Judged]:
    """Every step of one table judged (module docstring), in the order given."""
    changes = [clustered.difference(s.a, s.b, s.clusters, seed_values=s.seed_values, replicates=replicates,
                                    seed=seed, level=level) for s in steps]
    adjusted = power.holm([c.p for c in changes])
    out = []
    for step, change, p in zip(steps, changes, adjusted):
        sides = _sides(step, replicates, seed, level)
        detectable = _mde(change, level)
        said = verdict(change.interval, step.paper, rising=step.rising,
                       floors=[at_floor(s.interval, step.floor) for s in sides],
                       below=[below_floor(s.interval, step.floor) for s in sides],
                       mde=detectable, adjusted_p=p, alpha=1.0 - level)
        out.append(Judged(step, change, sides, p, detectable, said))
    return out
