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


def test_the_qa_srl_resume_point_is_read_from_its_curve():
    """The first budget ended at iteration 2,610 (off the 200-iteration grid), at 47.2 from iteration 2,600; the page
    once typed 2,400 and quoted 45.5."""
    record = glove.records.load("issue10")
    assert glove.resume_point(glove.single(record, "srl"))[0] == 2610
    said = glove.srl_text(record)
    assert said.startswith("QA-SRL reached 47.2 (iteration 2,600) in its first 20-minute budget, which stopped at "
                           "iteration 2,610 (20.6 min), and was continued with `deca train --resume <run>`")
    flat = {"single": {"srl": {"minutes": 5.0, "curve": [[100, 1, 10.0], [200, 2, 20.0], [300, 3, 25.0]]}}}
    assert glove.srl_text(flat) == "QA-SRL ran in one stretch of 5 minutes, ending at 25.0 at iteration 300"


def test_a_plateau_names_its_last_validation_on_it_and_the_first_above_it_on_both_pages():
    """The joint run's SST sat at 49.1-49.2 (the first candidate, the minority label), not at the majority's 50.9; the
    glove page named the first point above the plateau, sst_single_task.md the last one on it."""
    floors = glove.records.floors()
    values = glove.values()
    assert values["sst_plateau"] == "through iteration 400, first above it at iteration 500"
    assert values["sst_joint_plateau"] == "through own batch 125, first above it at own batch 187"
    assert values["sst_joint_level"] == "49.1-49.2, about the first candidate answerer's 49.1, the minority label"
    single = glove.records.load("sst_single_task")["curve"]
    majority = floors["sst"]["floors"]["constant answer"]
    assert glove.plateau(single, majority) == "through iteration 300, first above it at iteration 400"
    assert glove.plateau([[1, 60.0]], majority).startswith("at no validation")


def test_workers_and_the_machine_are_what_the_records_hold():
    assert glove.workers_text({"a": {"overrides": {"train.num_workers": 2, "train.cpus_per_worker": 1.0}}}) == (
        "each run on 2 Ray workers × 1 CPU")
    mixed = {"the joint run": {"overrides": {"train.num_workers": 2, "train.cpus_per_worker": 1.0}},
             "single": {"train": {"num_workers": 2}}}
    assert glove.workers_text(mixed) == ("each run on 2 Ray workers (1 CPU each in the joint run; CPUs per worker not "
                                         "recorded for the others)")
    assert glove.workers_text({"the run": {}}) == "Ray workers not recorded"
    assert glove.machine_text({}) == "a CPU machine whose model, core count and load were not recorded"
    values = glove.values()
    assert values["machine"] == glove.machine_text({})
    assert values["workers"].startswith("each run on 2 Ray workers (1 CPU")
    assert (values["sst_validations"], values["schema_validations"]) == ("26", "9")
