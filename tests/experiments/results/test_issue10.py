"""experiments/results/issue10.py: each verdict is given its curves' `rising` flags."""
from __future__ import annotations

from experiments.results import issue10, render


def record(single: list, joint: list) -> dict:
    row = {"single_at_same_batches": 60.0, "joint_last": 70.0, "single_at_iteration": 400}
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
