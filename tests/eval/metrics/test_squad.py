"""em / nem / nf1: hand-computed cases, and the real SQuAD dev set against the official v1.1 evaluation."""
from __future__ import annotations

import json
import random
import re
import string
from collections import Counter

import pytest

from deca.text import normalize_space
from eval.api import score_task
from eval.metrics import squad
from tests.conftest import shared_file


def test_normalize_text_follows_squad_v11():
    assert squad.normalize_text("The  Cat, sat!") == "cat sat"
    assert squad.normalize_text("An apple a day") == "apple day"
    assert squad.normalize_text("theatre and Anne") == "theatre and anne"  # articles only as whole words
    assert squad.normalize_text("(1,000)") == "1000"
    assert squad.normalize_text("") == ""


def test_f1_hand_computed():
    # "cat sat on mat" (4 tokens) vs "cat on mat" (3): 3 in common -> P 3/4, R 1, F1 6/7.
    assert squad.nf1(["the cat sat on the mat"], [["a cat on a mat"]]) == pytest.approx(100 * 6 / 7)
    # Bag of tokens: x:1, y:1 in common -> P = R = 2/3.
    assert squad.nf1(["x x y"], [["x y y"]]) == pytest.approx(100 * 2 / 3)


def test_max_over_several_golds_and_average():
    preds = ["denver broncos", "carolina"]
    golds = [["Broncos", "Denver Broncos."], ["carolina panthers", "panthers"]]
    # ex 1: exact with the second gold -> 1; ex 2: best F1 is 2/3 with "carolina panthers".
    assert squad.nf1(preds, golds) == pytest.approx(100 * (1 + 2 / 3) / 2)
    assert squad.nem(preds, golds) == pytest.approx(50.0)
    assert squad.em(preds, golds) == 0.0  # plain EM keeps punctuation and case


def test_empty_prediction_and_empty_normalized_gold_score_zero():
    assert squad.nf1([""], [["paris"]]) == 0.0
    assert squad.nem([""], [["paris"]]) == 0.0
    # A gold that normalizes to nothing: EM can match, F1 cannot (SQuAD v1.1 behaviour).
    assert squad.nem(["the"], [["a"]]) == 100.0
    assert squad.nf1(["the"], [["a"]]) == 0.0


def test_em_is_exact_string_match():
    assert squad.em(["positive", "negative"], [["positive"], ["positive"]]) == 50.0
    assert squad.em(["positive."], [["positive"]]) == 0.0


def test_length_mismatch_and_no_examples_raise():
    with pytest.raises(ValueError, match="2 predictions but 1"):
        squad.nf1(["a", "b"], [["a"]])
    with pytest.raises(ValueError, match="no examples"):
        squad.em([], [])


# --- an independent implementation of the official SQuAD v1.1 evaluate-v1.1.py, from its definition ---

_PUNCTUATION_TABLE = str.maketrans("", "", string.punctuation)


def _official_normalize(s: str) -> str:
    lowered = s.lower()
    no_punct = lowered.translate(_PUNCTUATION_TABLE)
    no_articles = re.sub(r"\b(a|an|the)\b", " ", no_punct)
    return " ".join(no_articles.split())


def _official_f1(prediction: str, truth: str) -> float:
    p, t = _official_normalize(prediction).split(), _official_normalize(truth).split()
    overlap = sum((Counter(p) & Counter(t)).values())
    if overlap == 0:
        return 0
    precision, recall = overlap / len(p), overlap / len(t)
    return (2 * precision * recall) / (precision + recall)


def _official_evaluate(dataset: list, predictions: dict) -> dict:
    f1 = exact_match = total = 0
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                total += 1
                truths = [a["text"] for a in qa["answers"]]
                pred = predictions[qa["id"]]
                exact_match += max(_official_normalize(pred) == _official_normalize(t) for t in truths)
                f1 += max(_official_f1(pred, t) for t in truths)
    return {"exact_match": 100.0 * exact_match / total, "f1": 100.0 * f1 / total}


def _perturb(i: int, qa: dict, rng: random.Random, other: str) -> str:
    golds = [a["text"] for a in qa["answers"]]
    gold = golds[0]
    words = gold.split()
    kind = i % 10
    if kind == 0:
        return gold
    if kind == 1:
        return rng.choice(golds)  # any of several golds
    if kind == 2:
        return "The " + gold.upper() + "."  # case, article and punctuation: normalized away
    if kind == 3:
        return " ".join(words[:-1])  # truncated (empty for one-word answers)
    if kind == 4:
        return gold + " and some more words"
    if kind == 5:
        return ""
    if kind == 6:
        return other  # another question's answer
    if kind == 7:
        return "  ".join(words) + " ,"  # extra spaces and punctuation
    if kind == 8:
        return "unanswerable"
    return " ".join(reversed(words))  # same bag of tokens, wrong order


@pytest.mark.corpora
def test_real_squad_dev_matches_official_evaluation():
    path = shared_file("squad/dev-v1.1.json")
    dataset = json.loads(path.read_text(encoding="utf-8"))["data"]
    qas = [qa for article in dataset for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    assert len(qas) == 10570
    rng = random.Random(0)
    predictions = {qa["id"]: _perturb(i, qa, rng, qas[(i * 7 + 3) % len(qas)]["answers"][0]["text"])
                   for i, qa in enumerate(qas)}
    # Gold rows as the processed data holds them: whitespace-normalized, lowercased answers.
    rows = [{"id": qa["id"], "answer": normalize_space(qa["answers"][0]["text"]).lower(),
             "answers": [normalize_space(a["text"]).lower() for a in qa["answers"]], "gold": None}
            for qa in qas]
    ours = score_task("squad", predictions, rows, headline="nf1")
    official = _official_evaluate(dataset, predictions)
    assert ours["n"] == 10570
    assert ours["metrics"]["nf1"] == official["f1"]
    assert ours["metrics"]["nem"] == official["exact_match"]
    assert 20 < official["exact_match"] < 80 and 20 < official["f1"] < 90  # the perturbations bite
