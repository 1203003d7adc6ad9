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


def test_the_recipe_sentence_reads_the_best_checkpoint_and_the_end_and_places_them_against_the_floors():
    curves = {"schema": [[1200, 0, 32.9], [1400, 0, 29.3], [1430, 0, 28.0]]}
    recipe = {"runs": {"fully_joint": {"best": {"_iteration": 1400, "sst": 49.08, "schema": 29.27},
                                       "curves": curves}}}
    floors = {"sst": {"floors": {"constant answer": 50.92}}, "schema": {"floor": 29.3}}
    found = multitask.recipe_facts(recipe, floors)
    assert (found["recipe_best_iteration"], found["recipe_sst"], found["recipe_sst_where"]) == ("1,400", "49.1", "under")
    assert (found["recipe_mwsc_where"], found["recipe_mwsc_end"], found["recipe_end_iteration"]) == ("at", "28.0", "1,430")
    assert multitask.where(51.0, 50.92) == "above"
