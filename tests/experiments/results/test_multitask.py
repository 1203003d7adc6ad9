"""experiments/results/multitask.py: a task without a single-task run says so; floors make it 'not tested'."""
from __future__ import annotations

from experiments.results import multitask


def test_rows_compare_at_about_as_many_batches_and_say_what_is_missing():
    record = {"runs": {"fully_joint": {"best": {"_iteration": 400, "sst": 49.0, "woz.en": 20.0, "srl": 19.0,
                                                "schema": 29.0},
                                       "curves": {"woz.en": [[200, 0, 20.0], [400, 0, 20.0]]}},
                       "single:woz.en": {"curves": {"woz.en": [[50, 0, 5.0], [100, 0, 17.0], [300, 0, 58.0]]},
                                         "minutes_at_last_validation": 3.0}}}
    woz = multitask.row(record, "woz.en", {})
    assert woz[2] == "17.0 (100)" and woz[4].startswith("inconclusive")
    assert multitask.row(record, "sst", {"sst": {"floor": 50.0, "answerer": "random candidate"}})[2] == "not recorded"


def test_a_single_task_curve_still_rising_at_the_point_compared_makes_it_not_tested():
    rising = [[100, 0, 10.0], [200, 0, 20.0], [300, 0, 40.0], [400, 0, 60.0], [600, 0, 60.0]]
    record = {"runs": {"fully_joint": {"best": {"_iteration": 1600, "woz.en": 70.0},
                                       "curves": {"woz.en": [[800, 0, 70.0], [1600, 0, 70.0]]}},
                       "single:woz.en": {"curves": {"woz.en": rising}, "minutes_at_last_validation": 3.0}}}
    woz = multitask.row(record, "woz.en", {})
    assert woz[2] == "60.0 (400)" and woz[4].startswith("not tested: a validation curve still rising")
