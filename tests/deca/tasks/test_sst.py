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
