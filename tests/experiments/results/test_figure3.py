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
