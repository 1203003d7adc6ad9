"""experiments/results/figure3.py: each task's floor beside its headline, and the sentences on the sources and
the floors computed from the record."""
from __future__ import annotations

import copy

from experiments.results import figure3, records


def test_the_committed_record_marks_qa_srl_and_mwsc_at_their_floors():
    """QA-SRL's nF1 29.3 is under copying the context (30.8), MWSC's 39.0 under the first candidate (50.0): the
    same largest source as the paper's says nothing there (the page once said only "4 of 4")."""
    record, floors = records.load("figure3"), records.floors()
    assert figure3.at_floor_tasks(record, floors) == ["QA-SRL", "MWSC"]
    rows = figure3.source_table(record, floors).splitlines()[2:]
    assert "30.8 (copy the context): **at or below**" in rows[1] and "at or below" not in rows[0]
    assert figure3.index_values(record, floors)["floor_note"] == "QA-SRL and MWSC at or below their trivial floors"
    assert figure3.floor_caveat(record, floors).startswith("But QA-SRL and MWSC score at or below their trivial floors")


def test_the_source_sentence_follows_the_shares():
    record, floors = copy.deepcopy(records.load("figure3")), records.floors()
    record["tasks"]["woz.en"]["share"] = {"vocabulary": 40.0, "context": 60.0, "question": 0.0}
    record["tasks"]["srl"]["headline"] = 60.0
    said = figure3.source_sentence(record)
    assert "WOZ 60.0% from the context (40.0% from the vocabulary)" in said
    assert "SST 100.0% from the question;" in said
    assert figure3.floor_note(record, floors) == "MWSC at or below its trivial floor"
    record["tasks"]["schema"]["headline"] = 60.0
    assert figure3.floor_caveat(record, floors) == "Every task scores above its trivial floor (one model: no interval)."


def test_the_renamed_means_give_their_model_count_once_and_the_floor(monkeypatch):
    """'0.0 ± 0.0 on happy/angry and 8.8 ± 19.6 on supportive/unsupportive (5 models)', not a count in brackets
    after each mean; the renamed tasks' floor beside them."""
    figures = {"sst.happy_angry": {"em": 0.0}, "sst.supportive_unsupportive": {"em": 10.0}}
    monkeypatch.setattr(figure3.zero_shot, "models", lambda g: [("a", figures), ("b", figures)])
    found = figure3.group_means("g", {"groups": [{"name": "g"}]})
    assert found["models"] == "2 models" and "models" not in found["sst.happy_angry"]
    floors = {t: {"floor": 50.9, "answerer": "constant answer"} for t in figure3.zero_shot.RENAMED}
    assert figure3.renamed_floors(floors) == "a 50.9 floor (constant answer) on both"
    floors["sst.happy_angry"] = {"floor": 52.0, "answerer": "constant answer"}
    assert figure3.renamed_floors(floors).startswith("floors of 52.0 (constant answer) on happy / angry and 50.9")


def test_the_renamed_group_means_stand_beside_their_zero_shot_verdicts(monkeypatch):
    """SST + MWSC's 57.9 and 54.7 were set beside the 50.9 floor with no verdict, while zero_shot.md judges both not
    tested and 2 and 3 of its 6 models give one answer to every review."""
    found = figure3.values()
    assert found["mwsc_verdicts"] == ("zero_shot.md's verdict: **not tested** on both, the renamed interval reaches "
                                      "the floor; of its 6 models, one answer to every review: 2 on happy/angry and 3 "
                                      "on supportive/unsupportive")
    assert found["alone_verdicts"].startswith("zero_shot.md's verdict: **fails** on both")
    verdicts = {("g", t): v for t, v in zip(figure3.zero_shot.RENAMED, ("fails", "not tested"))}
    figures = {t: {"top answers": [["happy", 872]] if "happy" in t else [["it", 10]]}
               for t in figure3.zero_shot.RENAMED}
    monkeypatch.setattr(figure3.zero_shot, "models", lambda g: [("m, seed 1", figures)])
    floors = {t: {"examples": 872} for t in figure3.zero_shot.RENAMED}
    assert figure3.verdict_note("g", {"groups": [{"name": "g"}]}, floors, verdicts) == (
        "zero_shot.md's verdicts: **fails** and **not tested**; of its 1 model, one answer to every review: 1 on "
        "happy/angry and 0 on supportive/unsupportive")


def test_a_share_that_is_not_all_recorded_says_so_and_the_machine_names_no_core_twice():
    record, floors = records.load("figure3"), records.floors()
    lines = figure3.renamed_lines(record, floors).splitlines()
    assert "97% from the context (the other 3% not recorded);" in lines[1] and "not recorded" not in lines[0]
    assert figure3.values(record, floors)["machine"] == "CPU model not recorded, 2 cores, bf16 units not recorded"
