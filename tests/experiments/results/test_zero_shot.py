"""experiments/results/zero_shot.py: renamed-label EMs within reach of chance are 'not tested'."""
from __future__ import annotations

from experiments.results import zero_shot


def test_every_committed_group_is_at_the_floor_so_none_tests_the_claim():
    text, heads = zero_shot.verdicts(zero_shot.records.load("zero_shot")["groups"],
                                     zero_shot.records.load("baselines")["tasks"])
    assert heads and set(heads) == {"not tested"}
    assert zero_shot.summary(heads).startswith("No group of models")


def test_a_group_clear_of_the_floor_gets_a_verdict(monkeypatch):
    good = {"sst": {"em": 82.0}, "sst.happy_angry": {"em": 80.0}, "sst.supportive_unsupportive": {"em": 81.0}}
    group = {"name": "g", "record": "x", "models": [["a", "a"], ["b", "b"], ["c", "c"]]}
    monkeypatch.setattr(zero_shot, "models", lambda g: [(k, {t: {"em": v["em"] + i * 0.1} for t, v in good.items()})
                                                         for i, k in enumerate("abc")])
    floors = {t: {"baseline": 50.0} for t in zero_shot.RENAMED}
    _, heads = zero_shot.verdicts([group], floors)
    assert "not tested" not in heads
    assert zero_shot.summary(heads).startswith("Verdicts:")
