"""ROUGE equals rouge-score called directly; parallel scoring equals serial scoring."""
from __future__ import annotations

import pytest
from rouge_score import rouge_scorer, tokenizers

from eval.metrics import rouge as rouge_mod
from eval.metrics.rouge import CachedStemTokenizer, rouge
from tests.conftest import shared_file

PREDS = [
    "the cat sat",
    "police arrested two men after the robbery on tuesday .",
    "",
    "officials said the stormy weather is expected to continue through the weekend .",
    "running runners ran quickly",
]
GOLDS = [
    "the cat sat on the mat",
    "two men were arrested by police following tuesday 's robbery .",
    "something was said",
    "forecasters expect storms to continue all weekend , officials said .",
    "the runner runs quick",
]


def _direct(preds, golds):
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    sums = {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0}
    for p, g in zip(preds, golds):
        s = scorer.score(g, p)
        for k in sums:
            sums[k] += s[k].fmeasure
    return {k: 100.0 * v / len(preds) for k, v in sums.items()}


def test_equals_direct_rouge_score_calls():
    ours = rouge(PREDS, [[g] for g in GOLDS], processes=1)
    direct = _direct(PREDS, GOLDS)
    for k in ("rouge1", "rouge2", "rougeL"):
        assert ours[k] == direct[k]
    assert ours["rouge"] == pytest.approx((direct["rouge1"] + direct["rouge2"] + direct["rougeL"]) / 3)


def test_hand_computed():
    m = rouge(["the cat sat"], [["the cat sat on the mat"]])
    # R1: 3 of 3 predicted, 3 of 6 gold -> F 2/3; R2: 2 of 2, 2 of 5 -> F 4/7; RL: LCS 3 -> 2/3.
    assert m["rouge1"] == pytest.approx(100 * 2 / 3)
    assert m["rouge2"] == pytest.approx(100 * 4 / 7)
    assert m["rougeL"] == pytest.approx(100 * 2 / 3)
    assert m["rouge"] == pytest.approx(100 * (2 / 3 + 4 / 7 + 2 / 3) / 3)


def test_stemming_is_on():
    assert rouge(["cats running"], [["cat runs"]])["rouge1"] == pytest.approx(100.0)


def test_empty_prediction_scores_zero():
    assert rouge([""], [["a gold summary"]]) == {"rouge1": 0.0, "rouge2": 0.0, "rougeL": 0.0, "rouge": 0.0}


def test_several_golds_take_the_best():
    m = rouge(["the cat sat"], [["a dog barked", "the cat sat"]])
    assert m["rouge"] == pytest.approx(100.0)


def test_parallel_equals_serial(monkeypatch):
    monkeypatch.setattr(rouge_mod, "CHUNK", 7)
    preds = [f"{p} {i}" for i in range(6) for p in PREDS]
    golds = [[f"{g} {i}"] for i in range(6) for g in GOLDS]
    assert rouge(preds, golds, processes=2) == rouge(preds, golds, processes=1)


@pytest.mark.corpora
def test_cached_tokenizer_equals_rouge_scores_default_on_real_stories():
    stories = sorted(shared_file("cnn_dailymail/cnn/stories").glob("*.story"))[:5]
    default = tokenizers.DefaultTokenizer(use_stemmer=True)
    cached = CachedStemTokenizer()
    for story in stories:
        text = story.read_text(encoding="utf-8").lower()
        assert cached.tokenize(text) == default.tokenize(text)
        assert cached.tokenize(text) == default.tokenize(text)  # second call served from the cache
