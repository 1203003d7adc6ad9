"""Scores on the clean subset (eval/clean.py), from the output of `deca contamination` (deca/contamination.py),
as `deca evaluate` adds them (infer/evaluate.py read_flagged, add_clean)."""
from __future__ import annotations

import json

import pytest

from deca.contamination import IDS_FILE, load_flagged
from deca.errors import DataError
from eval.clean import clean_scores


def rows(task: str, answers: list[str]) -> list[dict]:
    return [{"id": f"{task}-{i}", "answer": a, "answers": [a], "gold": None} for i, a in enumerate(answers)]


def write_ids(folder, splits: dict[str, list[str]]):
    folder.mkdir(parents=True, exist_ok=True)
    doc = {"format": 1, "n": 13, "splits": {k: {"any": v, "by_field": {}, "by_train_task": {}} for k, v in splits.items()}}
    (folder / IDS_FILE).write_text(json.dumps(doc), encoding="utf-8")
    return folder


def test_the_flagged_examples_are_left_out_of_each_score_and_the_decascore(tmp_path):
    data = {"sst": rows("sst", ["positive", "negative", "positive", "negative"]),
            "schema": rows("schema", ["bob", "alice"]), "woz.en": rows("woz.en", ["food: thai;"])}
    predictions = {"sst": {"sst-0": "positive", "sst-1": "positive", "sst-2": "positive", "sst-3": "positive"},
                   "schema": {"schema-0": "bob", "schema-1": "bob"}, "woz.en": {"woz.en-0": "food: thai;"}}
    folder = write_ids(tmp_path / "c", {"sst/validation": ["sst-1"], "schema/validation": ["schema-0", "schema-1"]})
    clean = clean_scores("validation", predictions, data, load_flagged(folder))
    assert clean["results"]["sst"]["n"] == 3 and clean["results"]["sst"]["excluded"] == 1
    assert clean["results"]["sst"]["headline"]["value"] == pytest.approx(100 * 2 / 3)  # sst-3 wrong, sst-1 gone
    assert clean["results"]["schema"] == {"n": 0, "excluded": 2}  # all flagged: no score, not in the decaScore
    assert clean["not_checked"] == ["woz.en"] and clean["tasks"] == ["sst"]
    assert clean["decascore"] == pytest.approx(100 * 2 / 3) and clean["partial"]


def test_evaluate_adds_clean_scores_when_the_folder_exists(tmp_path):
    from infer.evaluate import add_clean, clean_entry, read_flagged

    data = {"sst": rows("sst", ["positive", "negative"])}
    predictions = {"sst": [{"id": "sst-0", "prediction": "positive"}, {"id": "sst-1", "prediction": "positive"}]}
    scored = {"split": "validation", "results": {}}
    assert read_flagged(str(tmp_path / "absent")) is None and read_flagged(None) is None
    assert "clean" not in add_clean(scored, predictions, data, None)
    folder = write_ids(tmp_path / "c", {"sst/validation": ["sst-1"]})
    clean = add_clean(scored, predictions, data, read_flagged(str(folder)))["clean"]
    assert clean_entry(clean)["tasks"] == {"sst": {"n": 1, "excluded": 1, "headline": 100.0}}


def test_a_file_that_is_not_the_output_is_an_error_naming_it(tmp_path):
    (tmp_path / IDS_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(DataError, match=IDS_FILE):
        load_flagged(tmp_path)
