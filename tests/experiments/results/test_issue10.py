"""experiments/results/issue10.py: each verdict is given its curves' `rising` flags; joint and single-task are
compared at the same own batches, the single-task curve interpolated there (glove.py: overfitting is read
from the curve)."""
from __future__ import annotations

from experiments.results import glove, issue10, render


def record(single: list, joint: list, batches: float = 400) -> dict:
    row = {"joint_last": 70.0, "joint_own_batches": batches}
    return {"rows": {"woz.en": row}, "single": {"woz.en": {"curve": single}}, "joint": {"curves": {"woz.en": joint}}}


FLAT = [[800, 0, 70.0], [1600, 0, 70.0], [2400, 0, 70.0]]
RISING = [[100, 0, 10.0], [200, 0, 20.0], [300, 0, 40.0], [400, 0, 60.0], [600, 0, 60.0]]


def test_a_curve_rising_up_to_the_point_compared_is_not_tested():
    assert issue10.sides_rising(record(RISING, FLAT), "woz.en") == [True, False]
    assert issue10.joint_verdict(record(RISING, FLAT), "woz.en", None).startswith("not tested")
    flat_single = [[100, 0, 60.0], [200, 0, 60.0], [300, 0, 60.0], [400, 0, 60.0]]
    assert issue10.joint_verdict(record(flat_single, FLAT), "woz.en", None).startswith("inconclusive")


def test_rising_until_cuts_the_curve_at_the_point_compared():
    assert render.rising_until(RISING, 400) and not render.rising_until(RISING)


def test_single_task_is_interpolated_at_the_joint_runs_own_batches():
    curve = [[600, 0, 62.0], [800, 0, 76.0]]
    assert issue10.matched(curve, 650) == (65.5, (600, 62.0), (800, 76.0))
    assert issue10.matched(curve, 600) == (62.0, (600, 62.0), (600, 62.0))
    assert issue10.matched(curve, 900) is None
    cells = issue10.matched_cells(record(curve, FLAT, 650), "woz.en")
    assert cells == ["65.5 (600: 62.0; 800: 76.0)", "+4.5 (-6.0 to +8.0)"]  # joint 70.0 against 62.0 and 76.0
    assert issue10.matched_cells(record(curve, FLAT, 600), "woz.en") == ["62.0 (validated at 600)", "+8.0"]


def test_a_single_task_run_that_ended_before_as_many_batches_is_not_compared():
    short = record([[200, 0, 50.0], [400, 0, 55.0]], FLAT, 650)
    assert issue10.matched_cells(short, "woz.en") == ["- (run ended at 400)", "-"]
    assert issue10.joint_verdict(short, "woz.en", None).startswith("not compared")


def test_overfitting_is_a_fall_after_the_best_beyond_the_scatter_between_validations():
    falls = [[100, 0, 50.0], [200, 0, 80.0], [300, 0, 79.0], [400, 0, 78.2], [500, 0, 77.0], [600, 0, 76.1]]
    assert glove.after_best(falls).startswith("then overfits after its best (it falls 3.9 points")
    steady = [[100, 0, 50.0], [200, 0, 80.0], [300, 0, 78.0], [400, 0, 80.0], [500, 0, 78.0], [600, 0, 79.5]]
    assert glove.after_best(steady).startswith("then stays near its best")
