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
    assert woz[2] == "17.0 (validated at 100)" and woz[4].startswith("inconclusive")
    assert multitask.row(record, "sst", {"sst": {"floor": 50.0, "answerer": "random candidate"}})[2] == "not recorded"


def test_a_single_task_curve_still_rising_at_the_point_compared_makes_it_not_tested():
    rising = [[100, 0, 10.0], [200, 0, 20.0], [300, 0, 40.0], [400, 0, 60.0], [600, 0, 60.0]]
    record = {"runs": {"fully_joint": {"best": {"_iteration": 1600, "woz.en": 70.0},
                                       "curves": {"woz.en": [[800, 0, 70.0], [1600, 0, 70.0]]}},
                       "single:woz.en": {"curves": {"woz.en": rising}, "minutes_at_last_validation": 3.0}}}
    woz = multitask.row(record, "woz.en", {})
    assert woz[2] == "60.0 (validated at 400)" and woz[4].startswith("not tested: a validation curve still rising")


def test_the_recipe_sentence_reads_the_best_checkpoint_and_the_end_and_places_them_against_the_floors():
    curves = {"schema": [[1200, 0, 32.9], [1400, 0, 29.3], [1430, 0, 28.0]]}
    recipe = {"runs": {"fully_joint": {"best": {"_iteration": 1400, "sst": 49.08, "schema": 29.27},
                                       "curves": curves}}}
    floors = {"sst": {"floors": {"constant answer": 50.92}}, "schema": {"floor": 29.3}}
    found = multitask.recipe_facts(recipe, floors)
    assert (found["recipe_best_iteration"], found["recipe_sst"], found["recipe_sst_where"]) == ("1,400", "49.1", "under")
    assert (found["recipe_mwsc_where"], found["recipe_mwsc_end"], found["recipe_end_iteration"]) == ("at", "28.0", "1,430")
    assert multitask.where(51.0, 50.92) == "above"


def test_single_task_is_interpolated_at_the_joint_runs_own_batches_between_the_validations_around_it():
    record = {"runs": {"fully_joint": {"best": {"_iteration": 530, "woz.en": 54.9},
                                       "curves": {"woz.en": [[200, 0, 20.0], [530, 0, 54.9]]}},
                       "single:woz.en": {"curves": {"woz.en": [[100, 0, 0.0], [200, 0, 48.3], [350, 0, 71.7]]},
                                         "minutes_at_last_validation": 4.5}}}
    woz = multitask.row(record, "woz.en", {})
    assert woz[2] == "15.7 (100: 0.0; 200: 48.3)"
    short = {"runs": {**record["runs"], "single:woz.en": {"curves": {"woz.en": [[100, 0, 0.0]]},
                                                           "minutes_at_last_validation": 1.0}}}
    cut = multitask.row(short, "woz.en", {})
    assert cut[2] == "- (run ended at 100)" and cut[4].startswith("not compared")


def test_the_minutes_are_the_budgets_beside_the_last_validations_read_from_the_record():
    record = {"runs": {"fully_joint": {"run": "j", "minutes_budget": 14.0, "minutes_at_last_validation": 16.07,
                                       "last_iteration": 530},
                       "single:sst": {"run": "s", "minutes_budget": 3.5, "minutes_at_last_validation": 3.79},
                       "single:srl": {"run": "r", "minutes_budget": 3.5, "minutes_at_last_validation": 4.09}}}
    found = multitask.joint_facts(record, "x")
    assert (found["x_minutes"], found["x_last_minutes"]) == ("14", "16.1")
    assert (found["x_single_budget"], found["x_single_minutes"]) == ("3.5", "3.8-4.1")


def test_the_model_the_workers_and_the_machine_come_from_the_records():
    """"d = 200 with embeddings from N(0, 1)", "2 Ray workers × 1 CPU" and "a 2-core CPU machine" were typed: the
    first two are now multitask.json's (its `model_defaults`, from git history; the overrides), the cores not
    recorded."""
    early, recipe = multitask.records.load("multitask"), multitask.records.load("multitask_recipe")
    found = multitask.setup_facts(early, recipe)
    assert (found["early_d"], found["early_init"]) == ("200", "trained embeddings initialised from N(0, 1)")
    assert (found["early_lr"], found["early_tokens"], found["workers"]) == ("0.001", "5,000",
                                                                            "each run on 2 Ray workers × 1 CPU")
    assert found["machine"] == "a CPU machine whose model, core count and load were not recorded"
    bare = multitask.setup_facts({**early, "model_defaults": None}, recipe)
    assert bare["early_d"] == "not recorded" and bare["early_model_from"] == "not recorded"
