"""experiments/results/sst_single_task.py: whether issue 5's target is reached is computed from the record, and
the date and commit are the record's."""
from __future__ import annotations

from experiments.results import sst_single_task


def test_the_target_is_reached_only_at_or_above_80_within_30_minutes():
    assert sst_single_task.reached({"em": 81.4, "minutes": 7.5}) == "Reached"
    assert sst_single_task.reached({"em": 79.9, "minutes": 7.5}) == "Missed"
    assert sst_single_task.reached({"em": 81.4, "minutes": 31.0}) == "Missed"


def test_the_page_reads_its_verdict_count_and_provenance_from_the_record():
    record = dict(sst_single_task.records.load("sst_single_task"))
    found = sst_single_task.values(record)
    assert (found["date"], found["commit"]) == (record["date"], record["commit"])
    assert found["over_count"] == str(sum(p[2] >= 80.0 for p in record["curve"]))
    low = {**record, "best": {**record["best"], "em": 79.0}}
    assert sst_single_task.values(low)["reached"] == "Missed"


def test_what_the_curve_does_after_its_best_is_read_from_the_curve():
    record = dict(sst_single_task.records.load("sst_single_task"))
    assert sst_single_task.values(record)["after_best"].startswith("then overfits")
    flat = [[100 * k, 0.5 * k, 81.0 if k == 2 else 50.9 if k == 1 else 80.8 + 0.1 * (k % 2)] for k in range(1, 11)]
    found = sst_single_task.values({**record, "curve": flat})["after_best"]
    assert found.startswith("then stays near its best")
