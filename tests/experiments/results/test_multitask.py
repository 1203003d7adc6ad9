"""experiments/results/multitask.py: a task without a single-task run says so; floors make it 'not tested'."""
from __future__ import annotations

from experiments.results import multitask


def test_rows_compare_at_about_as_many_batches_and_say_what_is_missing():
    record = {"runs": {"fully_joint": {"best": {"_iteration": 400, "sst": 49.0, "woz.en": 20.0, "srl": 19.0,
                                                "schema": 29.0}},
                       "single:woz.en": {"curves": {"woz.en": [[50, 0, 5.0], [100, 0, 17.0], [300, 0, 58.0]]},
                                         "minutes_at_last_validation": 3.0}}}
    woz = multitask.row(record, "woz.en", {})
    assert woz[2] == "17.0 (100)" and woz[4].startswith("inconclusive")
    assert multitask.row(record, "sst", {"sst": {"baseline": 50.0}})[2] == "not recorded"
