from pathlib import Path

import pytest

from deca.registry import get_task
from tests.conftest import shared_file
from tests.deca.tasks._check import read_split, row_of

TASK = get_task("zre")


def test_fixture_example_end_to_end(fixture_corpora):
    examples, drops = read_split(TASK, "train", fixture_corpora)
    assert not drops and len(examples) == 4
    row = row_of(TASK, "train", examples[2])
    assert row["id"] == "train.0-3"
    assert row["question"] == "who are the siblings of emily bronte?"
    assert row["answer"] == "charlotte bronte, anne bronte"
    assert row["answers"] == ["charlotte bronte, anne bronte"]
    assert row["context"] == ("emily bronte lived with her sisters charlotte bronte and anne bronte at haworth.")


def test_no_answer_columns_means_unanswerable(fixture_corpora):
    examples, _ = read_split(TASK, "validation", fixture_corpora)
    assert [(e.question, e.answer) for e in examples] == [
        ("Who published The Hobbit?", "George Allen & Unwin"), ("Which company published Dune?", "unanswerable")]
    test, _ = read_split(TASK, "test", fixture_corpora)
    assert [e.id for e in test] == ["test.0-1", "test.0-2"]


def test_sources_are_the_fold_0_members_of_the_archive():
    (source,) = TASK.sources
    assert source.path == "zre/relation_splits.tar.bz2" and source.extract_to == "zre"
    assert set(source.members) == {rel for files in TASK.splits.values() for rel in files}


@pytest.mark.corpora
def test_real_subset_of_train():
    path = shared_file("zre/relation_splits/train.very_small.0")
    examples = list(TASK.read("train", [Path(path)], TASK.make_options()))
    assert len(examples) == 16800
    assert len({e.id for e in examples}) == 16800
    assert sum(e.answer == "unanswerable" for e in examples) == 8355  # lines with exactly 4 columns
    assert (examples[0].question, examples[0].answer) == ("The Speaker for the Dead has what character?",
                                                          "unanswerable")
    assert (examples[1].question, examples[1].answer) == ("What cemetery is Bob Considine located in?",
                                                          "Gate of Heaven Cemetery")
    assert examples[1].context == ("Bob Considine is interred in a crypt at Gate of Heaven Cemetery in "
                                   "Hawthorne, New York.")
    assert max(e.answer.count(", ") for e in examples) >= 10  # multi-answer lines joined by ", "
