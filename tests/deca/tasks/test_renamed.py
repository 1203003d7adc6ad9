"""Renamed-label variants (deca/tasks/_renamed.py): only the label words of question and answer change."""
import pytest

from deca.registry import get_task
from deca.tasks._renamed import RENAMINGS, rename
from tests.deca.tasks._check import read_split


def test_rename_replaces_whole_words_only():
    words = RENAMINGS["happy_angry"]
    assert rename("Is this review negative or positive?", words) == "Is this review angry or happy?"
    assert rename("Positive, not nonpositive", words) == "happy, not nonpositive"


@pytest.mark.parametrize("base, split", [("sst", "validation"), ("yelp", "test"), ("amazon", "test")])
@pytest.mark.parametrize("suffix", sorted(RENAMINGS))
def test_variants_change_only_the_label_words(fixture_corpora, base, split, suffix):
    words = RENAMINGS[suffix]
    original, _ = read_split(get_task(base), split, fixture_corpora)
    renamed, drops = read_split(get_task(f"{base}.{suffix}"), split, fixture_corpora)
    assert not drops and len(renamed) == len(original) > 0
    for a, b in zip(original, renamed):
        assert (b.id, b.context) == (a.id, a.context)
        assert b.answer == words[a.answer] and b.answer in b.question
        assert b.question == rename(a.question, words) != a.question
    task = get_task(f"{base}.{suffix}")
    assert task.eval_only and "train" not in task.splits and task.metric == get_task(base).metric
