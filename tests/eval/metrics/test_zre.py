"""QA-ZRE corpus F1: hand-computed corpus, `unanswerable` handling, several golds."""
from __future__ import annotations

import pytest

from eval.metrics.zre import corpus_f1, counts, simplify


def test_simplify_is_a_word_set_without_stop_words():
    assert simplify("The Obama, Barack and the obama") == {"obama", "barack"}
    assert simplify("") == frozenset()


def test_hand_computed_corpus():
    preds = ["obama barack", "unanswerable", "london", "unanswerable", "new york"]
    golds = [["Barack Obama"], ["paris"], ["unanswerable"], ["unanswerable"], ["new york city", "nyc"]]
    # tp: ex 1 only (word order ignored); ex 4 is a true negative (not counted);
    # system positives: ex 1, 3, 5; real positives: ex 1, 2, 5. P = R = 1/3.
    m = corpus_f1(preds, golds)
    assert m["precision"] == pytest.approx(100 / 3)
    assert m["recall"] == pytest.approx(100 / 3)
    assert m["corpus_f1"] == pytest.approx(100 / 3)


def test_unanswerable_is_never_a_positive_prediction():
    assert counts("unanswerable", ["unanswerable"]) == (0, 1, 0, 0)
    assert counts("unanswerable", ["paris"]) == (0, 0, 0, 1)
    assert counts("paris", ["unanswerable"]) == (0, 0, 1, 0)
    # Only the exact set {unanswerable} is the null answer.
    assert counts("unanswerable city", ["unanswerable city"]) == (1, 0, 1, 1)
    m = corpus_f1(["unanswerable"] * 3, [["unanswerable"]] * 3)
    assert m == {"corpus_f1": 0.0, "precision": 0.0, "recall": 0.0}


def test_several_golds_are_unioned():
    assert counts("new york city nyc", ["new york city", "nyc"])[0] == 1
    assert counts("new york", ["new york city", "nyc"])[0] == 0


def test_empty_prediction_is_a_wrong_positive():
    assert counts("", ["paris"]) == (0, 0, 1, 1)
    m = corpus_f1(["", "paris"], [["paris"], ["paris"]])
    assert m["precision"] == 50.0 and m["recall"] == 50.0 and m["corpus_f1"] == 50.0


def test_normalization_before_the_word_sets():
    # SQuAD normalization first: punctuation and articles go, duplicates collapse.
    assert corpus_f1(["The Paris, paris!"], [["paris"]])["corpus_f1"] == 100.0
