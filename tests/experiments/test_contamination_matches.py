"""experiments/contamination_matches.py: a field match on a text of >= n tokens is a 13-gram match, on a
shorter one the text found whole; the texts found whole are counted by examples."""
from __future__ import annotations

from experiments.contamination_matches import split_matches


def test_long_texts_are_the_ngram_matches_and_short_ones_are_counted_whole():
    texts = {"a": {"context": ["w"] * 13, "question": ["q"], "answer": ["x"]},
             "b": {"context": ["bye", "."], "question": ["q"], "answer": ["x"]},
             "c": {"context": ["bye", "."], "question": ["q"], "answer": ["y"] * 20}}
    by_field = {"context": ["a", "b", "c"], "question": [], "answer": ["a", "c"], "ngram": ["a", "c"]}
    found = split_matches(by_field, texts, n=13)
    assert found["ngram_by_field"] == {"context": 1, "question": 0, "answer": 1}
    assert [(x["id"], x["field"]) for x in found["ngram_texts"]] == [("a", "context"), ("c", "answer")]
    assert found["whole_texts"]["context"] == [["bye .", 2]]
    assert found["whole_texts"]["answer"] == [["x", 1]]
