"""eval/steps.py: a table's steps end as reproduced, opposite, fails, inconclusive (powered) or underpowered
(with both numbers), from clustered two-level intervals, Holm's adjusted p-values and each step's MDE."""
from __future__ import annotations

import numpy as np

from eval import clustered
from eval.stats import Sample
from eval.steps import Step, judge_steps
from eval.verdict import FAILS, INCONCLUSIVE, OPPOSITE, REPRODUCED, UNDERPOWERED


def runs(rng, accuracy: float, seeds: int = 2, n: int = 600) -> Sample:
    return Sample.of("mean", *[100.0 * (rng.random(n) < accuracy) for _ in range(seeds)])


def test_every_step_of_a_table_gets_one_of_the_outcomes():
    rng = np.random.default_rng(14)
    base, same = runs(rng, 0.60), runs(rng, 0.60)
    contexts = np.repeat(np.arange(120), 5)
    table = [
        Step("found", +5.0, base, runs(rng, 0.75), clusters=contexts),
        Step("turned", +5.0, base, runs(rng, 0.45), clusters=contexts),
        Step("powered null", +20.0, base, same, clusters=contexts),
        Step("too few seeds", +2.0, seed_values=([80.0, 82.0], [81.0, 84.0])),
        Step("below chance", 0.0, runs(rng, 0.80), runs(rng, 0.20), floor=50.0),
    ]
    judged = {j.step.name: j for j in judge_steps(table, replicates=300)}
    assert [judged[n].verdict for n in ("found", "turned", "powered null", "too few seeds", "below chance")] == [
        REPRODUCED, OPPOSITE, INCONCLUSIVE, UNDERPOWERED, FAILS]
    assert judged["powered null"].mde < 20.0 and judged["found"].change.method == clustered.CLUSTERED
    few = judged["too few seeds"]
    assert few.mde > 2.0 and few.note() == f"MDE {few.mde:.1f} > the paper's 2.0; seed-only interval"
    assert judged["below chance"].note() == "a side's interval lies wholly below the 50.0 floor"
    assert all(j.adjusted_p >= j.change.p for j in judged.values())


def test_holm_can_take_a_step_back_to_not_significant():
    """Five steps with p about 0.03 each: every interval excludes 0, none survives Holm over the five."""
    steps = [Step(f"s{i}", +1.0, seed_values=([0.0, 1.0, 2.0], [2.5, 3.5, 4.5])) for i in range(5)]
    judged = judge_steps(steps)
    assert all(j.change.interval.low > 0 and j.change.p < 0.05 for j in judged)
    assert {j.verdict for j in judged} <= {INCONCLUSIVE, UNDERPOWERED}
