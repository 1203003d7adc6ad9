import pytest

from deca.registry import get_task, resolve_tasks
from tests.deca.tasks._check import read_split, row_of

NAMES = ("amazon", "yelp", "imdb_uci")


def test_registered_as_evaluation_only_test_sets():
    for name in NAMES:
        task = get_task(name)
        assert (task.group, task.eval_only, task.metric, list(task.splits)) == ("sentiment", True, "em", ["test"])
    sentiment = {n for n in resolve_tasks("all") if get_task(n).group == "sentiment"}
    renamed = {f"{base}.{suffix}" for base in [*NAMES, "sst"] for suffix in ("happy_angry", "supportive_unsupportive")}
    assert sentiment == set(NAMES) | renamed  # the zero-shot sets and their renamed-label variants


@pytest.mark.parametrize("name, n, index, context, answer", [
    ("amazon", 4, 1, "broke after two weeks and support never answered.", "negative"),
    ("yelp", 3, 0, "the tacos were amazing!", "positive"),
    ("imdb_uci", 3, 1, 'a "must see", i laughed and cried.', "positive"),
])
def test_fixture_example_end_to_end(fixture_corpora, name, n, index, context, answer):
    task = get_task(name)
    examples, drops = read_split(task, "test", fixture_corpora)
    assert not drops and len(examples) == n
    assert len({e.id for e in examples}) == n
    row = row_of(task, "test", examples[index])
    assert row["id"] == f"{name}-{index + 1}"
    assert row["question"] == "is this review negative or positive?"
    assert (row["context"], row["answer"], row["answers"]) == (context, answer, [answer])


