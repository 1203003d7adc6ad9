import json

import pytest

from deca.errors import DataError
from deca.registry import Dropped, get_task
from pipelines.rows import to_row
from tests.conftest import shared_file
from tests.deca.tasks._check import bad_file, read_split, row_of

TASK = get_task("squad")


def test_fixture_example_end_to_end(fixture_corpora):
    examples, drops = read_split(TASK, "validation", fixture_corpora)
    assert not drops and len(examples) == 3
    first = examples[0]
    assert first.id == "fx0000000000000000000101"
    row = row_of(TASK, "validation", first)
    assert row["question"] == "when did curie win the chemistry prize?"
    assert row["answer"] == "1911"
    assert row["answers"] == ["1911", "in 1911", "1911"]
    assert row["context"].startswith("marie curie won the nobel prize in physics in 1903")
    assert row["gold"] is None


def test_question_whitespace_is_normalized(fixture_corpora):
    examples, _ = read_split(TASK, "train", fixture_corpora)
    assert [e.question for e in examples[:1] + examples[2:3]] == ["When did the Harbour Bridge open?",
                                                                   "What do sea otters eat?"]
    assert len({e.id for e in examples}) == len(examples)


def test_long_training_contexts_are_dropped_by_reason(fixture_corpora):
    examples, _ = read_split(TASK, "train", fixture_corpora)
    rows = [to_row(TASK, "train", e) for e in examples]
    dropped = [r for r in rows if isinstance(r, Dropped)]
    assert [(d.id, d.reason) for d in dropped] == [("fx0000000000000000000004", "context_too_long")]
    assert "433 context tokens > 400" in dropped[0].detail
    # the same example is kept in validation, and in training when the filter is off
    assert isinstance(to_row(TASK, "validation", examples[3]), dict)
    keep_all = TASK.make_options({"max_train_context_tokens": None})
    assert isinstance(to_row(TASK, "train", examples[3], keep_all), dict)
    strict = TASK.make_options({"max_train_context_tokens": 31})
    assert [isinstance(to_row(TASK, "train", e, strict), Dropped) for e in examples] == [True, True, False, True]


def test_truncated_json_names_file_and_line(tmp_path, fixture_corpora):
    data = (fixture_corpora / "squad/dev-v1.1.json").read_bytes()
    files = bad_file(tmp_path, TASK, "validation", data[: len(data) // 2])
    with pytest.raises(DataError, match=r"dev-v1\.1\.json:1: invalid JSON .*truncated") as err:
        list(TASK.read("validation", files, TASK.make_options()))
    assert "deca download" in str(err.value)


def test_invalid_json_and_utf8_name_the_line(tmp_path):
    files = bad_file(tmp_path, TASK, "validation", b'{"data": [\n  {"title": "x",\n   "paragraphs": [}\n]}')
    with pytest.raises(DataError, match=r"dev-v1\.1\.json:3: invalid JSON"):
        list(TASK.read("validation", files, None))
    files = bad_file(tmp_path, TASK, "validation", b'{"data": [\n{"title": "caf\xe9"}]}')
    with pytest.raises(DataError, match=r"dev-v1\.1\.json:2: not valid UTF-8"):
        list(TASK.read("validation", files, None))


def test_malformed_record_is_named(tmp_path):
    record = {"data": [{"title": "t", "paragraphs": [{"context": "c", "qas": [{"id": "q1", "question": "?"}]}]}]}
    files = bad_file(tmp_path, TASK, "validation", json.dumps(record).encode())
    with pytest.raises(DataError, match=r"data\[0\]\.paragraphs\[0\]\.qas\[0\]"):
        list(TASK.read("validation", files, None))


@pytest.mark.corpora
def test_real_validation_count_and_first_question():
    files = [shared_file("squad/dev-v1.1.json")]
    examples = list(TASK.read("validation", files, TASK.make_options()))
    assert len(examples) == TASK.paper_counts["validation"] == 10570
    assert len({e.id for e in examples}) == 10570
    first = examples[0]
    assert (first.id, first.question, first.answer) == (
        "56be4db0acb8001400a502ec", "Which NFL team represented the AFC at Super Bowl 50?", "Denver Broncos")
    assert first.answers == ["Denver Broncos"] * 3


@pytest.mark.corpora
def test_real_train_count():
    files = [shared_file("squad/train-v1.1.json")]
    assert sum(1 for _ in TASK.read("train", files, TASK.make_options())) == TASK.paper_counts["train"]
