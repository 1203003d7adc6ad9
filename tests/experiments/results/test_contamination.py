"""experiments/results/contamination.py: the split of matched contexts into texts found whole and 13-gram
matches, the quoted texts, the splits without a 13-gram match and the cost ratios come from the record."""
from __future__ import annotations

import copy

from experiments.results import contamination


def split(context: int, long: int, texts: list[str]) -> dict:
    return {"ngram_by_field": {"context": long, "question": 0, "answer": 0},
            "ngram_texts": [{"id": str(k), "field": "context", "text": x} for k, x in enumerate(texts)],
            "whole_texts": {"context": [["bye .", 8], ["thanks .", 6], ["ok .", 1]], "question": [],
                            "answer": [["she", 3]]}}


def test_the_texts_quoted_and_where_the_13_gram_matches_are():
    assert contamination.quotes([["bye .", 8], ["thanks .", 6], ["ok .", 1]]) == '"bye ." (8 examples), "thanks ." (6)'
    assert contamination.quotes([]) == "none"
    assert contamination.ngram_where(split(5, 2, ["a", "b"])) == "all in the context"
    mixed = {"ngram_by_field": {"context": 2, "question": 0, "answer": 1}}
    assert contamination.ngram_where(mixed) == "2 in the context, 1 in the answer"
    assert contamination.distinct(split(5, 2, ["s", "s"]), "sentence") == 'one sentence, "s"'
    assert contamination.distinct(split(5, 2, ["a", "b"]), "turn") == '2 distinct turns, e.g. "a"'


def test_contexts_found_whole_are_the_matched_contexts_less_those_matched_by_a_13_gram():
    record = copy.deepcopy(contamination.records.load("contamination"))
    found = contamination.match_values(record)
    woz = record["result"]["matrix"]["woz.en/validation"]["by_field"]
    long = record["matches"]["splits"]["woz.en/validation"]["ngram_by_field"]["context"]
    assert int(found["woz_context_whole"]) + int(found["woz_context_long"]) == woz["context"]
    assert int(found["woz_context_long"]) == long
    record["matches"]["splits"]["woz.en/validation"] = split(woz["context"], 3, ["x"] * 3)
    changed = contamination.match_values(record)
    assert (changed["woz_context_long"], changed["woz_context_whole"]) == ("3", f"{woz['context'] - 3:,}")
    assert changed["woz_context_quotes"] == '"bye ." (8 examples), "thanks ." (6)'


def test_splits_without_a_13_gram_match_are_named_from_the_matrix():
    record = copy.deepcopy(contamination.records.load("contamination"))
    matrix = record["result"]["matrix"]
    clean = [contamination.NAMES[r["task"]] for r in matrix.values() if not r["by_field"]["ngram"]]
    assert contamination.match_values(record)["none_in"] == " and ".join(clean)
    matrix["sst/validation"]["by_field"]["ngram"] = 1
    assert "SST" not in contamination.match_values(record)["none_in"]


def test_the_cost_gives_both_measurements_of_the_first_implementation():
    cost = copy.deepcopy(contamination.records.load("contamination")["cost"])
    cost.update(contamination_seconds=10.0, first_implementation_seconds=250.0,
                first_implementation_earlier_seconds=200.0)
    found = contamination.cost_values(cost)
    assert (found["cost_speedup_low"], found["cost_speedup_high"]) == ("20.0", "25.0")
    assert found["cost_first_earlier"] == "200"
