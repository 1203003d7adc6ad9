import pytest

from deca.registry import get_task
from deca.tasks.srl import clean, patch_case
from tests.conftest import shared_file
from tests.deca.tasks._check import bad_file, read_split, row_of

TASK = get_task("srl")


def test_fixture_example_end_to_end(fixture_corpora):
    examples, drops = read_split(TASK, "train", fixture_corpora)
    assert not drops and len(examples) == 7
    assert len({e.id for e in examples}) == 7
    row = row_of(TASK, "train", examples[2])
    assert row["id"] == "WIKI1_0-2"
    assert row["context"] == "the mill lane bridge (built in 1912) crosses the river near the old station."
    assert row["question"] == "where does something cross something?"
    assert row["answer"] == "near the old station"
    assert row["answers"] == ["near the old station", "the old station"]


def test_cleaning_and_case_patching_as_decanlp(fixture_corpora):
    examples, _ = read_split(TASK, "train", fixture_corpora)
    last = examples[-1]
    assert last.context == "Her brother, who didn't like the city, moved to Leeds in 1998."
    assert last.question == "who didn't like something?"
    assert last.answer == "Her brother"  # 'her brother' in the file: first letter raised to match the sentence
    dev, _ = read_split(TASK, "validation", fixture_corpora)
    assert dev[0].context == "The company sold Blue Lake water for $2 a bottle."
    assert [e.question for e in dev] == ["who sold something?", "what did someone sell?",
                                         "how much did someone sell something for?"]
    assert dev[2].answer == "$2 a bottle"


def test_clean_and_patch_units():
    assert clean("a -LRB- b -RRB- c , d -AMP- e") == "a (b) c, d & e"
    # quotes are dropped after the punctuation is joined, as in decaNLP (hence the space before the comma)
    assert clean("`` Hi '' , he said . ") == "Hi , he said."
    assert clean("we 're sure it 's 5 % up - front") == "we're sure it's 5% up-front"
    assert patch_case("The river", "they crossed the river") == "the river"
    assert patch_case("THE RIVER", "they crossed the river") == "the river"
    assert patch_case("the US army", "he joined the US Army in 1990") == "the US Army"
    assert patch_case("a lake", "they crossed the river") is None


def test_answer_not_in_context_is_dropped_with_reason(tmp_path):
    text = ("WIKI1_9\t1\nThe dog barked .\n2\tbarked\t1\n"
            "what\t_\t_\tbarked\t_\t_\t_\t?\tthe cat\n\n").encode()
    examples, drops = [], []
    for item in TASK.read("test", bad_file(tmp_path, TASK, "test", text), None):
        (examples if hasattr(item, "question") else drops).append(item)
    assert not examples
    assert [(d.id, d.reason) for d in drops] == [("WIKI1_9-0", "answer_not_in_context")]
    assert "wiki1.test.qa:4" in drops[0].detail


@pytest.mark.corpora
def test_real_counts_match_table_1():
    for split, n in TASK.paper_counts.items():
        files = [shared_file(rel) for rel in TASK.splits[split]]
        examples = list(TASK.read(split, files, TASK.make_options()))
        assert len(examples) == n  # nothing dropped: every answer is patched into its sentence
        assert len({e.id for e in examples}) == n
        assert all(a in e.context for e in examples for a in e.answers)


@pytest.mark.corpora
def test_real_first_example():
    files = [shared_file("srl/wiki1.train.qa")]
    first = next(iter(TASK.read("train", files, TASK.make_options())))
    assert first.context == ("There are four boat clubs that row on the River Dee: Aberdeen Boat Club, Aberdeen "
                             "Schools Rowing Association, Aberdeen University Boat Club and Robert Gordon "
                             "University Boat Club.")
    assert (first.id, first.question, first.answer) == ("WIKI1_0-0", "what rows?", "four boat clubs")
    assert len(first.answers) == 5
