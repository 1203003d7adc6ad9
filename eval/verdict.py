"""The one verdict rule of the project: does a measured change reproduce the paper's?

`verdict(change, paper_change, ...)` gives, from the interval of the change (eval.stats, eval.clustered), one
of five outcomes, tried in this order (the first that applies):

1. **not tested** (a curve): a side's validation curve was still rising over the last third of its budget
   to new highs, beyond its own checkpoint-to-checkpoint scatter (`still_rising`): the run had not finished
   learning, so neither its score nor its failure is final;
2. **fails**: a side lies significantly below its floor (`below_floor`: its whole interval under the task's
   floor, `baseline`): the model took the test and failed it, a result, not "not tested";
3. **not tested** (a floor): a side is at its floor (`at_floor`: its interval reaches the floor): it cannot
   be told from the strongest trivial answerer, so the comparison says nothing about the paper's claim;
4. **reproduced** / **opposite**: the interval excludes 0 on the side of the paper's change / on the other
   side (with `adjusted_p`, eg Holm's over the steps of a table (eval.power.holm), only when that is also
   under `alpha`: a step not significant after the correction counts as covering 0);
5. **underpowered** / **inconclusive**: the interval covers 0 (one run a side gives an unbounded interval).
   Underpowered when the step's minimum detectable effect (`mde`, eval.power) exceeds the size of the paper's
   change: the design could not have seen it (a paper change of 0 is then always underpowered: no design
   detects an effect of 0); inconclusive when the design was powered, or no `mde` is given.

Pages say "underpowered" with both numbers (`power_note`).

The floor of a task is the highest of its trivial floors on the rows it is judged on (`baseline`, from
eval/floors.py: the majority label, the random or first candidate, the constant or empty answer, copying the
context, its first sentence or lead-3, no change of state), for every metric, nF1, BLEU, ROUGE and joint goal
EM included: a side whose interval reaches it is "not tested", one whose interval lies wholly under it "fails".

Every report and table that says whether a finding holds calls `verdict` (experiments/table2_report.py,
experiments/table3.py, `deca compare`; eval/steps.py judges a table's steps with all five outcomes).
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from eval.floors import strongest
from eval.stats import Interval, t_two_sided_p

REPRODUCED = "reproduced"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
FAILS = "fails"
UNDERPOWERED = "underpowered"
VERDICTS = (REPRODUCED, OPPOSITE, INCONCLUSIVE, NOT_TESTED, FAILS, UNDERPOWERED)
ALPHA = 0.05  # the level an adjusted p-value is judged at
RISING_MARGIN = 0.5  # points a fitted curve must gain over the last third of its budget to count as rising


def verdict(change: Interval, paper_change: float, *, floors: Sequence[bool] = (),
            rising: Sequence[bool] = (), below: Sequence[bool] = (), mde: float | None = None,
            adjusted_p: float | None = None, alpha: float = ALPHA) -> str:
    """The verdict on a measured `change` (b - a, with its interval) against the paper's change (b - a), in the
    order of the module docstring.

    `floors`: per side, whether it sits at its floor (`at_floor`); `rising`: per side, whether its validation
    curve was still rising (`still_rising`): either makes the finding "not tested". A `rising` entry of None
    means unknown (the run kept no curve): the rule reads it as not rising, and whoever reports the verdict says
    so (`rising_unknown`, RISING_UNKNOWN). `below`: per side, whether
    it lies below its floor (`below_floor`): "fails". `mde`: the step's minimum detectable effect (eval.power):
    an interval covering 0 is "underpowered" when it exceeds |paper_change|. `adjusted_p`: the step's p-value
    adjusted over its table (eval.power.holm); at or over `alpha` the change counts as covering 0.
    """
    if any(rising):
        return NOT_TESTED
    if any(below):
        return FAILS
    if any(floors):
        return NOT_TESTED
    significant = adjusted_p is None or adjusted_p < alpha
    if change.low <= 0 <= change.high or not significant:
        return UNDERPOWERED if mde is not None and mde > abs(paper_change) else INCONCLUSIVE
    if paper_change == 0:
        return OPPOSITE  # the paper saw no change; here there is one
    return REPRODUCED if (change.low > 0) == (paper_change > 0) else OPPOSITE


RISING_UNKNOWN = "whether a side's curve still rose is unknown (no curve kept; if one did: not tested)"


def rising_unknown(rising: Sequence[bool | None], said: str) -> bool:
    """Whether verdict `said` rests on reading an unknown `rising` side (None) as not rising: a rising side would
    have made it "not tested", so the verdict holds only if that side had stopped rising."""
    return said != NOT_TESTED and any(r is None for r in rising)


def power_note(mde: float, paper_change: float, digits: int = 1) -> str:
    """Both numbers of an underpowered step: 'MDE 15.2 > the paper's 4.0'."""
    return f"MDE {mde:.{digits}f} > the paper's {abs(paper_change):.{digits}f}"


def at_floor(side: Interval, baseline: float | None) -> bool:
    """Whether a side's interval reaches the task's floor `baseline` (`baseline`) or lies below it (None: no
    floor known, as for runs whose rows are not at hand: never at the floor)."""
    if baseline is None:
        return False
    return side.low <= baseline


def below_floor(side: Interval, baseline: float | None) -> bool:
    """Whether a side's whole interval lies under the task's floor `baseline`: significantly worse than the
    strongest trivial answerer, it failed the test (None: no floor known, never below)."""
    if baseline is None:
        return False
    return side.high < baseline


def still_rising(curve: Sequence[tuple[float, float]], budget: float | None = None,
                 margin: float = RISING_MARGIN, alpha: float = ALPHA) -> bool:
    """Whether a validation curve [(iteration, value), ...] still rises over the last third of its budget
    (default: its last iteration), that is, whether the run was still reaching new highs when it stopped. Three
    conditions, all on the least-squares line through the points of that third:

    - it gains more than `margin` points across the third;
    - it ends more than `margin` above the best point before the third (a curve climbing back to a level it had
      already reached is not learning anything new);
    - where the third holds four points or more, its slope is above 0 beyond the points' own scatter about the
      line (one-sided t test at `alpha`, n - 2 degrees of freedom): a validation score moves from checkpoint to
      checkpoint by noise (on MWSC's 82 examples one example is 1.2 points), and a gain within it is not a rise.
      (Three points leave one degree of freedom, too few to judge a scatter by: the first two conditions decide.)

    Fewer than two points in the third: not rising (nothing to say)."""
    if not curve:
        return False
    budget = float(budget if budget is not None else max(step for step, _ in curve))
    start = budget * 2.0 / 3.0
    tail = [(float(s), float(v)) for s, v in curve if s >= start]
    if len(tail) < 2:
        return False
    xs, ys = [s for s, _ in tail], [v for _, v in tail]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return False
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    earlier = [float(v) for s, v in curve if s < start]
    if slope * (budget - start) <= margin or (earlier and my + slope * (budget - mx) <= max(earlier) + margin):
        return False
    if len(tail) < 4:
        return True
    scatter = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys)) / (len(tail) - 2)
    if scatter == 0:
        return True
    return t_two_sided_p(slope / math.sqrt(scatter / sxx), len(tail) - 2) / 2 < alpha


def baseline(task: str, rows: Sequence[Mapping[str, Any]]) -> float:
    """The task's floor on `rows` (the rows a side was scored on: id, context, question, answer and the gold its
    metric reads): the highest of eval/floors.py's trivial floors, whatever the metric."""
    return strongest(task, rows)[1]
