import pytest

from deca.errors import DataError
from deca.registry import get_task
from deca.text import detokenize
from pipelines.rows import to_row
from tests.conftest import shared_file


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("sst")
    examples = list(task.read("train", task.files("train", fixture_corpora), task.make_options()))
    assert len(examples) == 4
    row = to_row(task, "train", examples[0])
    assert row["question"] == "is this review negative or positive?"
    assert row["answer"] == "positive" and row["answers"] == ["positive"]
    assert row["context"] == "a stirring, funny film -- and a re-imagining of the genre."
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert len({e.id for e in examples}) == len(examples)


def test_real_counts_match_table_1():
    task = get_task("sst")
    for split, n in task.paper_counts.items():
        files = [shared_file(rel) for rel in task.splits[split]]
        assert sum(1 for _ in task.read(split, files, task.make_options())) == n


def _read_all(path, split="train"):
    task = get_task("sst")
    return list(task.read(split, [path], task.make_options()))


def test_an_unterminated_quote_is_refused_at_its_line(tmp_path):
    """csv would read the next row into the quoted sentence: one example fewer, a label lost, no error."""
    path = tmp_path / "train_binary_sent.csv"
    path.write_text('label,sentence\n1,"a fine film\n0,a dull film\n1,good\n', encoding="utf-8")
    with pytest.raises(DataError, match="unterminated quote") as err:
        _read_all(path)
    assert err.value.line == 2 and str(path) in str(err.value)


def test_invalid_utf8_is_reported_on_its_exact_line(tmp_path):
    path = tmp_path / "train_binary_sent.csv"
    rows = [f"1,sentence number {i} with some words to fill the read buffer" for i in range(1, 6000)]
    data = ("label,sentence\n" + "\n".join(rows) + "\n").encode("utf-8")
    lines = data.split(b"\n")
    lines[4999] = b"0,bad \xff byte"  # line 5000 of the file
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(DataError, match="UTF-8") as err:
        _read_all(path)
    assert err.value.line == 5000


def test_empty_file_is_refused(tmp_path):
    path = tmp_path / "dev_binary_sent.csv"
    path.write_bytes(b"")
    with pytest.raises(DataError, match="empty file"):
        _read_all(path, "validation")
