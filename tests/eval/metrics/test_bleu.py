"""Corpus BLEU equals sacrebleu called directly on the same strings."""
from __future__ import annotations

import pytest
import sacrebleu

from eval.metrics.bleu import bleu, reference_streams

PREDS = ["der hund bellt laut .", "ich habe keine ahnung", "", "das ist ein kleiner test ."]
REFS = ["der hund bellt .", "ich habe wirklich keine ahnung", "hallo welt", "das ist ein test ."]


def test_equals_direct_sacrebleu_call():
    direct = sacrebleu.corpus_bleu(PREDS, [REFS], lowercase=True).score
    assert bleu(PREDS, [[r] for r in REFS]) == direct
    assert 0 < direct < 100


def test_identical_is_100_and_disjoint_is_0():
    assert bleu(REFS, [[r] for r in REFS]) == pytest.approx(100.0)
    assert bleu(["x y z w"] * 2, [["a b c d"], ["e f g h"]]) == 0.0


def test_lowercased_comparison():
    assert bleu(["The Dog Barks ."], [["the dog barks ."]]) == pytest.approx(100.0)


def test_several_references_with_ragged_counts():
    golds = [["der hund bellt .", "ein hund bellt laut ."], ["ich habe keine ahnung"]]
    streams = reference_streams(golds)
    assert streams == [["der hund bellt .", "ich habe keine ahnung"], ["ein hund bellt laut .", None]]
    preds = ["der hund bellt laut .", "ich habe keine ahnung"]
    assert bleu(preds, golds) == sacrebleu.corpus_bleu(preds, streams, lowercase=True).score


def test_all_empty_predictions():
    assert bleu(["", ""], [["a b c d"], ["e f g h"]]) == 0.0
