"""experiments/results/readme.py: the index lines' figures come from the records, those a page module does
not give included."""
from __future__ import annotations

from experiments.results import readme


def matrix(counts: dict[str, int]) -> dict:
    return {"result": {"matrix": {f"{t}/validation": {"task": t, "by_field": {"ngram": n}} for t, n in counts.items()}}}


def test_the_ngram_matches_are_counted_not_typed():
    said = readme.ngram_matches(matrix({"sst": 0, "schema": 0, "woz.en": 28, "srl": 4}))["ngram_matches"]
    assert said == "28 WOZ and 4 QA-SRL validation examples, none in SST or MWSC"
    said = readme.ngram_matches(matrix({"sst": 3, "schema": 0, "woz.en": 28, "srl": 4}))["ngram_matches"]
    assert said == "3 SST, 28 WOZ and 4 QA-SRL validation examples, none in MWSC"
    assert readme.ngram_matches(matrix({"sst": 0}))["ngram_matches"] == "no validation example"


def test_the_serving_line_says_how_many_steps_the_model_took():
    said = readme.serve_caveat({"floor": {"row_answer_tokens": 1}})["serve_caveat"]
    assert said.startswith("the model answers each long row in 1 greedy step,")
    assert "in 7 greedy steps" in readme.serve_caveat({"floor": {"row_answer_tokens": 7}})["serve_caveat"]


def test_a_line_takes_its_page_modules_index_values():
    text = readme.line("table3.md", "{{squad_where}} its {{squad_floor}} floor; WOZ rising in {{woz_rising}}",
                       {"docs/results/table3.md": "experiments.results.table3"})
    assert text.endswith("below its 9.6 floor; WOZ rising in every run")


def test_the_index_carries_the_pages_caveats():
    """Table 2's tally with the verdicts that hold only if WOZ's unkept curves had stopped rising; Table 3's every
    rising task and every task at its floor; gpu.md's best as the best of the kept rows."""
    index = dict(readme.INDEX)
    assert "{{tally}}{{held_if_flat}}" in index["table2.md"]
    assert "{{rising}}" in index["table3.md"] and "{{at_floor}}" in index["table3.md"]
    assert "WOZ still rising" not in index["table3.md"]
    assert "the best of the {{kept_rows}} validation rows kept of {{logged_rows}} logged" in index["gpu.md"]
    text = readme.line("table3.md", index["table3.md"], {"docs/results/table3.md": "experiments.results.table3"})
    assert "QA-SRL in every run (24.2-27.0 against 28.1, first sentence)" in text and "QA-SRL in every run;" in text


def test_a_best_of_validation_index_line_names_its_count_of_validations_and_the_split_that_picks_it():
    """sst_single_task's 81.4 is the best of 64 validations and glove's single-task figures each the best of its run's;
    the index once quoted them as bare bests."""
    generated = {"docs/results/sst_single_task.md": "experiments.results.sst_single_task",
                 "docs/results/glove_single_vs_joint.md": "experiments.results.glove"}
    index = dict(readme.INDEX)
    sst = readme.records.load("sst_single_task")
    said = readme.line("sst_single_task.md", index["sst_single_task.md"], generated)
    assert f"of {len(sst['curve'])} validations, on the split that picks it (one run; the last 77.0)" in said
    assert "picked the same way (the best of 3 settings) gets 80.6" in said
    issue10 = readme.records.load("issue10")
    said = readme.line("glove_single_vs_joint.md", index["glove_single_vs_joint.md"], generated)
    assert "each the best of its run's validations on the split that picks it (one run each)" in said
    assert f"SST 82.7 EM (of {len(issue10['single']['sst']['curve'])})" in said
    assert f"MWSC 47.6 (of {len(issue10['single']['schema']['curve'])}; at or below its 50.0 floor)" in said
