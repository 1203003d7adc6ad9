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
    found = transfer.values({"runs": runs, "train_pairs": 10, "validation_examples": 5, "date": "d", "commit": "c"},
                             floors)
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


def test_bleu_is_given_against_the_floor_the_loss_as_a_tail_mean_and_the_floor_with_two_decimals():
    pre = curve([1.0, 1.2, 1.3, 1.4, 1.5, 1.5, 1.6, 1.6, 1.5, 1.5])
    rnd = curve([0.5, 0.6, 0.6, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7])
    losses = {"pretrained": [[i * 10, 4.0] for i in range(1, 20)] + [[200, 3.0]],
              "random": [[i * 10, 4.2] for i in range(1, 20)] + [[200, 3.2]]}
    runs = {name: {"curve": c, "nf1": c, "loss": losses[name], "run": name} for name, c in
            (("pretrained", pre), ("random", rnd))}
    floors = {"iwslt_de_en": {"floor": 1.1666, "answerer": "constant answer", "floors": {"copy the source": 0.5}},
              "iwslt_de_en nf1": {"floor": 5.0, "answerer": "constant answer"}}
    found = transfer.values({"runs": runs, "train_pairs": 10, "validation_examples": 5, "date": "d",
                             "commit": "c"}, floors)
    assert (found["pre_over_floor"], found["rnd_over_floor"]) == ("+0.37", "-0.47")  # means 1.533, 0.7
    assert (found["loss_pre"], found["loss_rnd"]) == ("3.90", "4.10")  # the last 10 logged, not the last one
    assert "the 1.17 floor" in found["verdict"] and "ratio" not in found


def test_what_the_record_does_not_hold_is_said_not_recorded():
    """transfer.json holds neither the machine nor the Ray workers: the page once said "2-core" and "2 Ray CPU
    workers"."""
    found = transfer.values()
    assert found["machine"] == "a CPU machine whose model, core count and load were not recorded"
    assert found["workers"] == "Ray workers not recorded"
