"""experiments/results/table2.py: cells from runs or two-seed summaries, rising from the curves, a verdict on
every step."""
from __future__ import annotations

import math

import pytest

from experiments.results import records, table2


def test_two_values_give_back_their_mean_and_sd():
    import statistics

    values = table2.two_values(47.4, 1.8)
    assert statistics.mean(values) == pytest.approx(47.4) and statistics.stdev(values) == pytest.approx(1.8)


def record(curve_b=None):
    run = {"task": "schema", "command": "", "commit": None, "params_digest": None, "machine": "m", "load": None,
           "minutes": 1.0, "still_rising": None, "best_iteration": 1}
    runs = []
    for variant in table2.VARIANTS:
        for seed, value in ((1, 40.0), (2, 41.0), (3, 42.0)):
            curve = curve_b if (variant == "satt" and curve_b) else [[100, value], [200, value], [300, value]]
            runs.append({**run, "variant": variant, "seed": seed, "curve": curve, "scores": {"schema": value + 10 * (variant == "satt")}})
    return {"runs": runs, "iterations": {"schema": 300}, "summaries": {}}


def test_cells_come_from_the_runs_and_a_rising_curve_is_found():
    flat = record()
    assert table2.cell_values(flat, "schema", "satt") == [50.0, 51.0, 52.0]
    assert not table2.rising(flat, "schema", "satt")
    assert table2.rising(record(curve_b=[[100, 10.0], [200, 30.0], [250, 40.0], [300, 50.0]]), "schema", "satt")


def test_the_budget_is_each_runs_own_or_the_records_figure():
    found = record()
    assert table2.iterations(found, "schema") == (300, 300) and table2.budget(found, "schema") == "300"
    found["runs"][0]["iterations"] = 800  # one run with its own budget, the rest transcribed without one
    assert table2.iterations(found, "schema") == (300, 800) and table2.budget(found, "schema") == "300 to 800"
    for r in found["runs"]:
        r["iterations"] = 1200
    assert table2.budget(found, "schema") == "1,200"


def test_a_third_seed_joins_the_two_seeds_kept_only_as_mean_and_sd_exactly():
    import statistics

    true = [45.0, 47.0]  # the two earlier seeds, kept only as their mean and sd
    runs = [{"name": f"s{i}", "task": "srl", "variant": "s2s", "scores": None} for i in (1, 2)]
    runs.append({"name": "s3", "task": "srl", "variant": "s2s", "scores": {"srl": 50.0}})
    found = {"runs": runs, "summaries": {"srl": {"s2s": {"mean": statistics.mean(true), "sd": statistics.stdev(true)}}}}
    values = table2.cell_values(found, "srl", "s2s")
    assert statistics.mean(values) == pytest.approx(statistics.mean(true + [50.0]))
    assert statistics.stdev(values) == pytest.approx(statistics.stdev(true + [50.0]))
    runs[0]["scores"] = {"srl": 45.0}  # one unscored run cannot be a two-seed summary
    with pytest.raises(records.RecordError, match="s2"):
        table2.cell_values(found, "srl", "s2s")


def test_every_step_has_a_verdict_and_the_floor_makes_mwsc_fail_or_not_tested():
    text, tally, _ = table2.steps(record(), {"schema": {"floor": 50.0, "answerer": "first candidate"}})
    assert sum(tally.values()) == 3  # the record holds MWSC only: S2S->SAtt, SAtt->CAtt, CAtt->QPtr
    assert tally == {"fails": 3}  # S2S, +CAtt and +QPtr at 40-42, wholly below 50: every step has such a side
    _, tally, _ = table2.steps(record(), {"schema": {"floor": 41.0, "answerer": "first candidate"}})
    assert tally == {"not tested": 3}  # 40-42 reaches 41


def test_without_a_floor_three_seeds_give_a_real_verdict():
    text, tally, _ = table2.steps(record(), {})
    assert tally == {"reproduced": 2, "inconclusive": 1}
    assert "S2S → +SAtt | +2.4 | +10.0" in text and "**reproduced**" in text


def test_the_committed_record_has_every_run_field():
    found = records.load("table2")
    assert records.check_runs(found["runs"]) == []
    assert all(not math.isnan(v) for t in table2.TASKS for v in table2.cell_values(found, t, "qptr"))
