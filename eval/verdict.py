"""The one verdict rule of the project: does a measured change reproduce the paper's?

`verdict(change, paper_change, ...)` gives, from the interval of the change (eval.stats, eval.clustered), one
of five outcomes, tried in this order (the first that applies):

1. **not tested** (a curve): a side's validation curve was still rising over the last third of its budget
   (`still_rising`): the run had not finished learning, so neither its score nor its failure is final;
2. **fails**: a side lies significantly below its floor (`below_floor`: its whole interval under the task's
   chance or majority baseline): the model took the test and failed it, a result (opt-in: `below=`);
3. **not tested** (a floor): a side is at its floor (`at_floor`: its interval reaches the baseline): it cannot
   be told from guessing, so the comparison says nothing about the paper's claim;
4. **reproduced** / **opposite**: the interval excludes 0 on the side of the paper's change / on the other
   side (with `adjusted_p`, eg Holm's over the steps of a table (eval.power.holm), only when that is also
   under `alpha`: a step not significant after the correction counts as covering 0);
5. **underpowered** / **inconclusive**: the interval covers 0 (one run a side gives an unbounded interval).
   Underpowered when the step's minimum detectable effect (`mde`, eval.power) exceeds the size of the paper's
   change: the design could not have seen it (a paper change of 0 is then always underpowered: no design
   detects an effect of 0); inconclusive when the design was powered, or no `mde` is given.

Pages say "underpowered" with both numbers (`power_note`).

The floor of a task comes from its gold answers (`baseline`): for a classification task (an exact-match headline
and at most `MAX_LABELS` distinct answers: SST, MNLI, ...) the EM of always answering the most frequent gold
answer (`majority`); for a task whose question names two candidates, ``"... <x> or <y>?"`` with the gold among
them (MWSC), the expected EM of picking one at random (`random_candidate`); other tasks (nF1, BLEU, ROUGE...):
none, so they are never "at the floor".

Every report and table that says whether a finding holds calls `verdict` (experiments/table2_report.py,
experiments/table3.py, `deca compare`; eval/steps.py judges a table's steps with all five outcomes).
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence

from deca.registry import all_tasks
from eval.stats import Interval

REPRODUCED = "reproduced"
OPPOSITE = "opposite"
INCONCLUSIVE = "inconclusive"
NOT_TESTED = "not tested"
FAILS = "fails"
UNDERPOWERED = "underpowered"
VERDICTS = (REPRODUCED, OPPOSITE, INCONCLUSIVE, NOT_TESTED, FAILS, UNDERPOWERED)
ALPHA = 0.05  # the level an adjusted p-value is judged at
MAX_LABELS = 10  # distinct gold answers of a classification task
NAMED_SHARE = 0.9  # share of questions that must name their gold as a candidate
EXACT = ("em", "nem")  # headline metrics a baseline is computed for
RISING_MARGIN = 0.5  # points a fitted curve must gain over the last third of its budget to count as rising


def verdict(change: Interval, paper_change: float, *, floors: Sequence[bool] = (),
            rising: Sequence[bool] = (), below: Sequence[bool] = (), mde: float | None = None,
            adjusted_p: float | None = None, alpha: float = ALPHA) -> str:
    """The verdict on a measured `change` (b - a, with its interval) against the paper's change (b - a), in the
    order of the module docstring.

    `floors`: per side, whether it sits at its floor (`at_floor`); `rising`: per side, whether its validation
    curve was still rising (`still_rising`): either makes the finding "not tested". `below`: per side, whether
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


def power_note(mde: float, paper_change: float, digits: int = 1) -> str:
    """Both numbers of an underpowered step: 'MDE 15.2 > the paper's 4.0'."""
    return f"MDE {mde:.{digits}f} > the paper's {abs(paper_change):.{digits}f}"


def at_floor(side: Interval, baseline: float | None) -> bool:
    """Whether a side's interval reaches the task's chance/majority `baseline` or lies below it (None: no
    baseline known for the task, never at the floor)."""
    if baseline is None:
        return False
    return side.low <= baseline


def below_floor(side: Interval, baseline: float | None) -> bool:
    """Whether a side's whole interval lies under the task's chance/majority `baseline`: significantly worse
    than guessing, it failed the test (None: no baseline known, never below)."""
    if baseline is None:
        return False
    return side.high < baseline


def still_rising(curve: Sequence[tuple[float, float]], budget: float | None = None,
                 margin: float = RISING_MARGIN) -> bool:
    """Whether a validation curve [(iteration, value), ...] still rises over the last third of its budget
    (default: its last iteration): the least-squares line through the points of that third gains more than
    `margin` points across it. Fewer than two points there: not rising (nothing to say)."""
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
    return slope * (budget - start) > margin


def majority(answers: Sequence[str]) -> float:
    """EM (0..100) of answering the most frequent gold answer every time."""
    if not answers:
        raise ValueError("no answers to count")
    return 100.0 * Counter(a.strip().lower() for a in answers).most_common(1)[0][1] / len(answers)


def names_gold(question: str, answer: str) -> bool:
    """Whether `question` ends by naming `answer` as one of two candidates: "... <answer> or <y>?" or
    "... <x> or <answer>?"."""
    q, g = " ".join(question.lower().split()), " ".join(answer.lower().split())
    return bool(g) and q.endswith("?") and (q.endswith(f" or {g}?") or f" {g} or " in q[-(2 * len(g) + 200):])


def random_candidate(answers: Sequence[str], questions: Sequence[str]) -> float | None:
    """Expected EM (0..100) of picking one of the question's two named candidates at random; None unless most
    questions name their gold as a candidate."""
    named = [names_gold(q, a) for q, a in zip(questions, answers)]
    if not named or sum(named) < NAMED_SHARE * len(named):
        return None
    return 50.0 * sum(named) / len(named)


def baseline(task: str, answers: Sequence[str], questions: Sequence[str] = ()) -> float | None:
    """The task's floor from its gold answers (and questions): random candidate, else majority for a
    classification task, else None."""
    tasks = all_tasks()
    if task not in tasks or tasks[task].metric not in EXACT or not answers:
        return None
    if questions:
        chance = random_candidate(answers, questions)
        if chance is not None:
            return chance
    if len({a.strip().lower() for a in answers}) <= MAX_LABELS:
        return majority(answers)
    return None
