"""experiments/results/render.py: templates refuse stray figures; verdicts are eval/verdict.py's, with why."""
from __future__ import annotations

import pytest

from experiments.results.render import TemplateError, fill, interval, judge, mean_sd, table
from eval.stats import Interval


def test_fill_replaces_every_placeholder():
    assert fill("EM {{em}} on {{task}}", {"em": "81.7", "task": "SST"}) == "EM 81.7 on SST"


@pytest.mark.parametrize("values", [{"em": "1"}, {"em": "1", "task": "SST", "typed": "82.7"}])
def test_fill_refuses_a_missing_or_unused_value(values):
    with pytest.raises(TemplateError):
        fill("EM {{em}} on {{task}}", values)


def test_table_and_numbers():
    assert table(["a", "b"], [["x", 1]]) == "| a | b |\n|---|---:|\n| x | 1 |"
    assert mean_sd([1.0, 3.0]) == "2.0 ± 1.4"
    assert mean_sd([5.0]) == "5.0"
    assert interval(Interval(1.0, float("-inf"), float("inf"))).endswith("[unbounded: one run a side]")


def test_judge_reproduced_with_three_close_seeds():
    change, said = judge([50.0, 50.2, 49.8], [60.0, 60.3, 59.9], paper=+5.0)
    assert said == "reproduced" and change.low > 0


def test_judge_says_why_two_seeds_are_inconclusive():
    _, said = judge([50.0, 51.0], [52.0, 53.0], paper=+5.0)
    assert said == "inconclusive: 2 seeds a side"


def test_judge_at_the_floor_is_not_tested_even_when_the_interval_excludes_zero():
    _, said = judge([48.0, 50.0, 52.0], [60.0, 60.3, 59.9], paper=+5.0, floor=50.0)
    assert said.startswith("not tested: a side's interval reaches the 50.0 floor")


def test_judge_rising_curve_is_not_tested():
    _, said = judge([50.0, 50.2, 49.8], [60.0, 60.3, 59.9], paper=+5.0, rising=[False, True])
    assert said.startswith("not tested") and "still rising" in said


def test_judge_opposite():
    _, said = judge([60.0, 60.3, 59.9], [50.0, 50.2, 49.8], paper=+5.0)
    assert said == "opposite"


def test_judge_paired_sees_a_steady_difference_that_welch_calls_inconclusive():
    before, after = [70.0, 80.0, 90.0], [70.6, 80.5, 90.7]
    assert judge(before, after, paper=+1.0)[1].startswith("inconclusive")
    change, said = judge(before, after, paper=+1.0, paired=True)
    assert said == "reproduced" and change.low > 0


def test_judge_a_side_wholly_below_the_floor_fails_and_one_reaching_it_is_not_tested():
    trained, renamed = [80.0, 82.0, 78.0], [10.0, 20.0, 30.0]
    _, said = judge(trained, renamed, paper=0.0, floor=50.0)
    assert said == "fails: a side's interval lies wholly below the 50.0 floor"
    assert judge(trained, [45.0, 50.0, 55.0], paper=0.0, floor=50.0)[1] == (
        "not tested: a side's interval reaches the 50.0 floor")
    assert judge(trained, [70.0, 71.0, 72.0], paper=0.0, floor=50.0)[1] == "opposite"  # clear of it: judged


def test_judge_says_the_floor_with_the_digits_asked_for_and_one_by_default():
    _, said = judge([0.7], [1.5], paper=+1.0, floor=1.1666)
    assert said.endswith("no interval clear of the 1.2 floor")
    _, said = judge([0.7], [1.5], paper=+1.0, floor=1.1666, digits=2)
    assert said.endswith("no interval clear of the 1.17 floor")
