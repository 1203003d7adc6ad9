"""experiments/results/zero_shot.py: renamed-label EMs within reach of the floor are 'not tested', wholly
below it 'fails'."""
from __future__ import annotations

from experiments.results import zero_shot


def test_the_committed_groups_below_the_floor_fail():
    """The Table 3 models answer 0.7-10 EM on both renamings and SST alone (experiments/grid.sh's five seeds)
    0.0 on happy/angry and 8.8 [0.0, 26.7] on supportive/unsupportive: wholly below the 50.9 majority floor, they
    fail; SST + MWSC's reach it."""
    floors = zero_shot.records.floors()
    text, heads = zero_shot.verdicts(zero_shot.records.load("zero_shot")["groups"], floors)
    assert heads == ["fails", "fails", "not tested", "not tested", "fails", "fails"]
    assert "50.9 (constant answer)" in text
    assert zero_shot.summary(heads) == "Verdicts: 4 fails, 2 not tested."


def test_a_group_clear_of_the_floor_gets_a_verdict(monkeypatch):
    good = {"sst": {"em": 82.0}, "sst.happy_angry": {"em": 80.0}, "sst.supportive_unsupportive": {"em": 81.0}}
    group = {"name": "g", "record": "x", "models": [["a", "a"], ["b", "b"], ["c", "c"]]}
    monkeypatch.setattr(zero_shot, "models", lambda g: [(k, {t: {"em": v["em"] + i * 0.1} for t, v in good.items()})
                                                         for i, k in enumerate("abc")])
    floors = {t: {"floor": 50.0, "answerer": "random candidate"} for t in zero_shot.RENAMED}
    _, heads = zero_shot.verdicts([group], floors)
    assert "not tested" not in heads
    assert zero_shot.summary(heads).startswith("Verdicts:")
