"""experiments/results/table3.py: the findings' verdicts follow the seeds and the rising curves."""
from __future__ import annotations

from experiments.results import table3


def record(rising_woz: bool, squad_gain: float) -> dict:
    runs = []
    for strategy in table3.STRATEGIES:
        for seed, jitter in ((1, 0.0), (2, 0.1), (3, -0.1)):
            gain = squad_gain if strategy == "anti_curriculum" else 0.0
            scores = {"squad_dev": 10.0 + gain + jitter, "sst": 70.0, "srl": 20.0, "woz.en": 40.0 + jitter, "schema": 30.0}
            runs.append({"strategy": strategy, "seed": seed, "scores": scores,
                         "still_rising": {"woz.en": rising_woz, "squad_dev": False}})
    return {"runs": runs}


def test_a_clear_squad_gain_over_three_seeds_is_reproduced_and_a_rising_sum_not_tested():
    text, tally = table3.findings(record(rising_woz=True, squad_gain=5.0), {})
    rows = text.splitlines()[2:]
    assert "**reproduced**" in rows[1]  # SQuAD first raises SQuAD
    assert rows[0].count("not tested") == 1 and rows[2].count("not tested") == 1  # the sums: WOZ rising
    assert tally["not tested"] == 2


def test_without_rising_curves_the_sum_gets_a_verdict():
    _, tally = table3.findings(record(rising_woz=False, squad_gain=5.0), {})
    assert "not tested" not in tally


def test_the_results_table_carries_the_floor_row_and_the_sum_s_floor():
    floors = {t: {"floor": v, "answerer": a} for t, v, a in (("squad_dev", 9.6, "first sentence"),
                                                             ("sst", 53.6, "constant answer"),
                                                             ("srl", 28.1, "first sentence"),
                                                             ("woz.en", 0.0, "constant answer"),
                                                             ("schema", 50.0, "first candidate"))}
    text = table3.results_table(record(False, 0.0), floors)
    assert "| floor (strongest trivial answerer) |  | 9.6 | 53.6 | 28.1 | 0.0 | 50.0 | 141.3 | squad_dev: first" in text
    row = table3.results_table(record(False, 0.0), {"sst": floors["sst"]}).splitlines()[-1]
    assert [c.strip() for c in row.split("|")[3:9]] == ["-", "53.6", "-", "-", "-", "-"]  # no sum floor


def test_a_squad_side_reaching_its_floor_is_not_tested():
    floors = {"squad_dev": {"floor": 10.0, "answerer": "first sentence"}}  # fully joint's 9.9-10.1 reach it
    text, tally = table3.findings(record(rising_woz=False, squad_gain=5.0), floors)
    assert tally["not tested"] == 2 and "reaches the 10.0 floor" in text.splitlines()[3]
    floors = {"squad_dev": {"floor": 60.0, "answerer": "first sentence"}}  # every side wholly below it
    assert table3.findings(record(rising_woz=False, squad_gain=5.0), floors)[1]["fails"] == 2
