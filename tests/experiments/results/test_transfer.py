"""experiments/results/transfer.py: the table and the 'ahead from' iteration follow the curves; the floor row
and the verdict follow records/floors.json."""
from __future__ import annotations

from experiments.results import transfer


def curve(values):
    return [[i, 0.0, v] for i, v in zip((250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250, 2500), values)]


def test_ahead_from_is_the_first_shown_iteration_after_which_pretrained_stays_ahead():
    pre = curve([0.0, 0.1, 0.2, 0.2, 0.3, 0.1, 0.5, 0.6, 0.7, 0.8])
    rnd = curve([0.1, 0.0, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.2])  # random ahead at 250 and 1500
    runs = {name: {"curve": c, "nf1": c, "loss": [[2500, 3.0]], "run": name} for name, c in
            (("pretrained", pre), ("random", rnd))}
    floors = {"iwslt_de_en": {"floor": 0.05, "answerer": "constant answer", "floors": {"copy the source": 0.01}},
              "iwslt_de_en nf1": {"floor": 0.05, "answerer": "constant answer"}}
    found = transfer.values({"runs": runs, "train_pairs": 10, "validation_examples": 5}, floors)
    assert found["ahead_from"] == "2,000"
    assert found["direction"] == "is seen here"
    assert found["verdict"].startswith("not tested: one run a side")  # one run has no interval clear of a floor
    assert found["table"].splitlines()[-1] == "| floor | 0.05 (constant answer) | 0.1 (constant answer) | " \
                                               "0.05 (constant answer) | 0.1 (constant answer) |"
    assert (found["rnd_where"], found["pre_where"]) == ("above", "above")


def test_the_committed_page_quotes_the_floors_record():
    floors = transfer.records.floors("transfer")
    found = transfer.values()
    assert found["floor_bleu"] == f"{floors['iwslt_de_en']['floor']:.2f}"
    assert found["copy_bleu"] == f"{floors['iwslt_de_en']['floors']['copy the source']:.2f}"
