"""experiments/results/transfer.py: the table and the 'ahead from' iteration follow the curves."""
from __future__ import annotations

from experiments.results import transfer


def curve(values):
    return [[i, 0.0, v] for i, v in zip((250, 500, 750, 1000, 1250, 1500, 1750, 2000, 2250, 2500), values)]


def test_ahead_from_is_the_first_shown_iteration_after_which_pretrained_stays_ahead():
    pre = curve([0.0, 0.1, 0.2, 0.2, 0.3, 0.1, 0.5, 0.6, 0.7, 0.8])
    rnd = curve([0.1, 0.0, 0.1, 0.1, 0.1, 0.2, 0.2, 0.2, 0.2, 0.2])  # random ahead at 250 and 1500
    runs = {name: {"curve": c, "nf1": c, "loss": [[2500, 3.0]], "run": name} for name, c in
            (("pretrained", pre), ("random", rnd))}
    found = transfer.values({"runs": runs, "train_pairs": 10, "validation_examples": 5})
    assert found["ahead_from"] == "2,000"
    assert found["direction"] == "is seen here"
    assert found["verdict"].startswith("inconclusive")
