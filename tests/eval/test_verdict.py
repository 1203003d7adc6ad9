"""eval/verdict.py's five outcomes: "fails" below the floor, "underpowered" when the design could not see the
paper's change, Holm's adjusted p-value, and their order."""
from __future__ import annotations

import math

import pytest

from eval.stats import Interval, seed_interval
from eval.verdict import (FAILS, INCONCLUSIVE, NOT_TESTED, OPPOSITE, REPRODUCED, UNDERPOWERED, VERDICTS, at_floor,
                          below_floor, power_note, verdict)

DROP = Interval(-60.0, -75.0, -45.0)  # as trained 80, renamed 20 (chance 50)


def test_a_side_wholly_below_its_floor_fails_and_one_reaching_it_is_not_tested():
    renamed, trained = Interval(20.0, 10.0, 30.0), Interval(80.0, 78.0, 82.0)
    assert below_floor(renamed, 50.0) and not below_floor(trained, 50.0) and not below_floor(renamed, None)
    below = [below_floor(s, 50.0) for s in (trained, renamed)]
    floors = [at_floor(s, 50.0) for s in (trained, renamed)]
    assert verdict(DROP, 0.0, floors=floors, below=below) == FAILS
    assert verdict(DROP, 0.0, floors=floors) == NOT_TESTED  # without `below`: as before
    reaching = Interval(48.0, 40.0, 56.0)
    assert at_floor(reaching, 50.0) and not below_floor(reaching, 50.0)
    assert verdict(DROP, 0.0, floors=[False, True], below=[False, False]) == NOT_TESTED


def test_the_zero_shot_models_below_chance_fail():
    """Ten renamed-label models at 0.7-43 EM against a chance of 50: significantly below it, they fail."""
    renamed = seed_interval([0.7, 12.0, 20.0, 25.0, 30.0, 35.0, 38.0, 40.0, 41.0, 43.0])
    assert renamed.high < 50.0 and verdict(DROP, 0.0, below=[False, below_floor(renamed, 50.0)]) == FAILS


def test_a_rising_curve_comes_first_then_fails_then_the_floor():
    assert verdict(DROP, 0.0, rising=[True, False], below=[False, True]) == NOT_TESTED
    assert verdict(DROP, 0.0, floors=[True, True], below=[False, True]) == FAILS


def test_an_interval_covering_0_is_underpowered_when_the_mde_exceeds_the_papers_change():
    covers = Interval(1.0, -6.0, 8.0)
    assert verdict(covers, +4.0, mde=15.0) == UNDERPOWERED
    assert verdict(covers, -4.0, mde=15.0) == UNDERPOWERED
    assert verdict(covers, +4.0, mde=3.0) == INCONCLUSIVE  # powered: a real null
    assert verdict(covers, +4.0) == INCONCLUSIVE  # no MDE given: as before
    assert verdict(Interval(9.0, 2.0, 16.0), +4.0, mde=15.0) == REPRODUCED  # seen despite the power
    assert verdict(Interval(1.0, -math.inf, math.inf), 2.0, mde=math.inf) == UNDERPOWERED
    assert power_note(15.24, -4.0) == "MDE 15.2 > the paper's 4.0"


def test_a_step_not_significant_after_holm_is_not_reproduced():
    clear = Interval(2.0, 0.5, 3.5)
    assert verdict(clear, +1.2, adjusted_p=0.01) == REPRODUCED
    assert verdict(clear, +1.2, adjusted_p=0.2) == INCONCLUSIVE
    assert verdict(clear, +1.2, adjusted_p=0.2, mde=3.0) == UNDERPOWERED
    assert verdict(Interval(-2.0, -3.5, -0.5), +1.2, adjusted_p=0.06) == INCONCLUSIVE


@pytest.mark.parametrize("outcome", [FAILS, UNDERPOWERED])
def test_the_new_outcomes_are_verdicts(outcome):
    assert outcome in VERDICTS and OPPOSITE in VERDICTS and len(set(VERDICTS)) == 6


def test_an_nf1_task_has_a_floor_from_its_rows_and_its_sides_are_judged_against_it():
    """QA-SRL-like rows whose answer is the context's first sentence: copying it scores 100 nF1 on two rows
    and 0 on two, a floor of 50 nF1. A side at 45-55 reaches it (not tested); a side at 20-30 lies under it
    (fails); a side at 70-80 clears it and the change is judged."""
    from eval.verdict import baseline

    contexts = ["john ate . it was late .", "mary ran . she won .", "x y z", "a b c"]
    answers = ["john ate", "mary ran", "nothing alike", "qqq"]
    rows = [{"id": str(i), "context": c, "question": "who?", "answer": a, "answers": [a]}
            for i, (c, a) in enumerate(zip(contexts, answers))]
    floor = baseline("srl", rows)
    assert floor == pytest.approx(50.0)
    at, under, clear = Interval(50.0, 45.0, 55.0), Interval(25.0, 20.0, 30.0), Interval(75.0, 70.0, 80.0)
    change = Interval(5.0, 1.0, 9.0)
    judged = lambda a, b: verdict(change, 4.0, floors=[at_floor(s, floor) for s in (a, b)],  # noqa: E731
                                  below=[below_floor(s, floor) for s in (a, b)])
    assert judged(at, clear) == NOT_TESTED and judged(under, clear) == FAILS and judged(clear, clear) == REPRODUCED


def test_an_unknown_rising_side_is_read_as_not_rising_and_flagged():
    """A side whose run kept no curve (None) is read as not rising, as before; `rising_unknown` says the
    verdict rests on that reading, except where it is "not tested" anyway."""
    from eval.verdict import rising_unknown

    covers = Interval(1.0, -6.0, 8.0)
    assert verdict(covers, +4.0, mde=15.0, rising=[None, False]) == verdict(covers, +4.0, mde=15.0) == UNDERPOWERED
    assert verdict(covers, +4.0, rising=[None, True]) == NOT_TESTED
    assert rising_unknown([None, False], UNDERPOWERED) and rising_unknown([None], REPRODUCED)
    assert not rising_unknown([False, True], UNDERPOWERED) and not rising_unknown([None], NOT_TESTED)
    assert not rising_unknown((), INCONCLUSIVE)
