"""experiments/plan.py: more seeds for more noise and a smaller effect, a planned design finds its effect at
the stated power, and the committed plan is the one the records give."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from eval.stats import t_quantile_at, welch_p
from experiments import plan
from experiments.results import planned, records
from experiments.results.table2 import VARIANTS


def test_more_variance_or_a_smaller_effect_needs_more_seeds():
    base = plan.plan_step(seed_var=2.0, example_var=0.0, target=2.0)
    noisier = plan.plan_step(seed_var=4.0, example_var=0.0, target=2.0)
    smaller = plan.plan_step(seed_var=2.0, example_var=0.0, target=1.5)
    assert base["reachable"] and noisier["reachable"] and smaller["reachable"]
    assert noisier["seeds"] > base["seeds"] and smaller["seeds"] > base["seeds"]
    assert base["mde"] < 2.0 <= plan.design_mde(2.0, 0.0, base["seeds"] - 1)  # the fewest that do


def test_examples_that_alone_exceed_the_effect_are_said_and_get_the_minimum():
    found = plan.plan_step(seed_var=1.0, example_var=1.0, target=2.0)  # the examples alone: MDE 2.8
    assert not found["reachable"] and found["seeds"] == plan.MIN_SEEDS
    assert found["examples_mde"] == pytest.approx(2.8016, abs=1e-3)


def test_a_planted_effect_is_found_at_the_stated_power():
    """Seeds drawn around two means that differ by the planned design's MDE: Welch's test at 5% finds the
    difference in about 80% of the trials (t quantiles make the MDE a close, slightly conservative guide)."""
    rng = np.random.default_rng(0)
    sd, target = 1.2, 2.5  # per-side seed sd; the paper's effect
    found = plan.plan_step(seed_var=2 * sd ** 2, example_var=0.0, target=target)
    seeds, effect = found["seeds"], found["mde"]
    hits = sum(welch_p(rng.normal(0.0, sd, seeds), rng.normal(effect, sd, seeds)) < 0.05 for _ in range(2000))
    assert 0.76 <= hits / 2000 <= 0.88


def test_one_side_against_a_fixed_floor_is_found_at_the_stated_power():
    """Zero-shot's question: is the renamed side clear of its floor? Models drawn around floor + the planned
    one-sided design's MDE: a one-sample t test at 5% (two-sided) finds it in about 80% of the trials."""
    rng = np.random.default_rng(1)
    sd, distance = 3.0, 5.0
    found = plan.plan_step(seed_var=sd ** 2, example_var=0.0, target=distance, sides=1)
    models, effect = found["seeds"], found["mde"]
    assert found["reachable"] and effect < distance <= plan.design_mde(sd ** 2, 0.0, models - 1, sides=1)
    crit = t_quantile_at(0.975, models - 1)
    draws = rng.normal(effect, sd, (2000, models))
    t = draws.mean(axis=1) / (draws.std(axis=1, ddof=1) / math.sqrt(models))
    assert 0.76 <= float(np.mean(np.abs(t) > crit)) <= 0.88


def test_zero_shot_rows_read_the_renamed_sides_own_per_example_noise():
    """The examples' share of a renamed side's mean comes from its models' answers (it was read as the change
    of the side from itself: 0 however the models erred)."""
    made = {s["step"]: s for s in plan.make()["steps"] if s["table"] == "zero_shot"}
    mwsc = made["SST + MWSC: supportive / unsupportive"]
    assert mwsc["example_variance_from"].startswith("measured") and mwsc["example_sd_of_mean"] > 0.5


def test_the_pooled_spread_and_the_assumed_example_variance():
    assert plan.pooled_variance([[1.0, 3.0], [5.0, 5.0], [7.0]]) == pytest.approx(1.0)  # (2 + 0) / 2
    assert plan.pooled_variance([[1.0], [2.0]]) is None
    assert plan.assumed_example_variance([50.0, 50.0], 100) == pytest.approx(50.0)  # 2 x 2500 / 100


def test_the_committed_plan_is_the_records_plan_and_reaches_every_page():
    made = plan.make()
    assert json.loads(plan.PATH.read_text(encoding="utf-8")) == json.loads(json.dumps(made, ensure_ascii=False))
    assert [sum(s["table"] == t for s in made["steps"]) for t in ("table2", "table3", "zero_shot")] == [12, 4, 6]
    assert all(s["seeds"] >= plan.MIN_SEEDS and s["iterations"] >= s["iterations_now"] for s in made["steps"])
    text = planned.section("table2", made)
    assert "| srl | +SAtt → +CAtt | 3 |" in text and "MDE" in text and "vs the paper's 7.0" in text
    lines = plan.run_lines(made)
    t3 = made["planned_runs"]["table3"]["all"]
    done = plan.recorded_table2()  # Table 2 runs recorded at the planned budget are not run again
    table2_left = sum(done.get(f"{task}-{v}-s{seed}", 0) < c["iterations"] for task, c in
                      made["planned_runs"]["table2"].items() for seed in made["seeds"][:c["seeds"]] for v in VARIANTS)
    assert len(lines) == table2_left + 3 * t3["seeds"] + sum(
        c["seeds"] for g, c in made["planned_runs"]["zero_shot"].items() if g != "Table 3 five-task models")
    assert not any(line.startswith(("table2 sst ", "table2 schema ")) for line in lines)  # all at their budget
    assert [line for line in lines if line.startswith("table3 ")][:4] == [
        f"table3 all {s} {seed} {t3['iterations']}" for seed, s in ((123, "fully_joint"), (123, "anti_curriculum"),
                                                                    (123, "curriculum"), (7, "fully_joint"))]
    assert all(not math.isnan(s["mde"]) for s in made["steps"])


def test_a_task_whose_seeds_never_differ_is_refused():
    with pytest.raises(records.RecordError, match="no two seeds"):
        plan.entry("table2", "s", "sst", 1.0, 1.0, [[80.0, 80.0]], [[80.0, 80.0]], 0.0, "x", 10, False, 100)


def test_a_budget_is_doubled_where_a_curve_rose_its_rise_is_unknown_or_a_side_never_beat_its_floor():
    """Rising (True), unknown (None: no curve kept) and undertrained (every run at or under the floor while the
    paper's figure is above it) each double the iterations; the page says which."""
    common = ("table2", "s", "sst", 1.0, 1.0, [[80.0, 81.0]], [[80.0, 81.0]], 0.0, "x", 10)
    assert plan.entry(*common, False, 100)["iterations"] == 100
    for rising, low, note in ((True, False, " (rising)"), (None, False, " (rising unknown)"),
                              (False, True, " (at its floor)")):
        step = plan.entry(*common, rising, 100, at_floor=low)
        assert step["iterations"] == 200 and planned.budget_note(step) == note
    assert plan.either([False, None]) is None and plan.either([None, True]) is True and not plan.either([False])
    assert plan.undertrained([7.3, 8.6], 9.6, 75.0) and not plan.undertrained([47.8, 49.0], 50.0, 46.3)
    assert not plan.undertrained([9.0, 10.1], 9.6, 75.0)


def test_zero_shot_budgets_follow_their_models_curves():
    """A zero-shot group made by the grid keeps whether each model's curve still rose: one rising doubles the
    group's budget; a group without that record (no curve kept) reads as unknown and doubles too."""
    made = {s["step"]: s for s in plan.make()["steps"] if s["table"] == "zero_shot"}
    groups = {g["name"]: g for g in records.load("zero_shot")["groups"]}
    for name in ("SST alone", "SST + MWSC"):
        step = made[f"{name}: happy / angry"]
        assert step["rising"] == plan.either(list(groups[name]["still_rising"].values()))
        assert step["iterations"] == step["iterations_now"] * (1 if step["rising"] is False else 2)
