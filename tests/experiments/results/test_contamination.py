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


def test_the_plain_words_headings_follow_the_counts():
    record = copy.deepcopy(contamination.records.load("contamination"))
    result = record["result"]
    found = contamination.plain_values(result)
    assert found["sst_heading"] == "no overlap" and found["sst_common_said"] == "all 872"
    assert found["schema_untouched"] == "no context or question overlaps"
    woz = result["matrix"]["woz.en/validation"]
    woz.update(flagged=83, by_field={"context": 83, "question": 0, "answer": 0, "ngram": 0})
    assert contamination.heading(woz, 13) == ("10.0% of the validation examples overlap training data (in their "
                                              "contexts), 0.0% by a 13-gram")
    result["matrix"]["sst/validation"].update(flagged=2,
                                              by_field={"context": 2, "question": 0, "answer": 0, "ngram": 2})
    result["matrix"]["schema/validation"]["by_field"]["question"] = 3
    changed = contamination.plain_values(result)
    assert changed["sst_heading"].startswith("0.2% of the validation examples")
    assert changed["sst_ngram_said"].startswith("2 ")
    assert changed["schema_untouched"] == "3 questions overlap"
    assert changed["flagged_shares"] == "QA-SRL 37.3%, MWSC 30.5%, WOZ 10.0%, SST 0.2%"


def test_the_cost_runs_begun_above_the_cores_give_no_headline():
    cost = copy.deepcopy(contamination.records.load("contamination")["cost"])
    note = contamination.cost_load_note(cost)
    assert note.startswith("No headline: load above the cores. Every timed run began with a load above the "
                           "machine's 2 cores (prepare 4.3, contamination 3.1")
    assert "earlier session is not recorded" in note
    cost["load"] = {"prepare": "1.0 -> 1.2", "contamination": "1.1 -> 1.0", "first_implementation": "0.9 -> 1.0"}
    cost["larger"]["load"] = "1.5 -> 1.9"
    assert contamination.cost_load_note(cost) == ""
    del cost["cores"]
    assert "cores are not recorded" in contamination.cost_load_note(cost)


def test_the_page_names_no_cpu_the_record_lacks_and_generates_the_rerun_line():
    record = contamination.records.load("contamination")
    found = contamination.values()
    assert found["machine"].endswith("CPU model and bf16/AMX units not recorded")
    assert found["rerun_machine"] == "CPU model and bf16/AMX units not recorded"
    assert contamination.cpu_said({"cpu": "X", "units": ["amx_bf16"]}) == "X, amx_bf16"
    assert found["rerun_command"] == record["matches"]["command"]
    assert "with the new job: the same contamination.json" not in found["cost_commands"]
    assert found["load_prepare"] == record["cost"]["load"]["prepare"]
