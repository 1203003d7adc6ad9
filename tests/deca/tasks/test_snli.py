import json

import pytest

from deca.registry import Dropped, Example, get_task
from deca.tasks.snli import read as read_files
from deca.text import detokenize
from pipelines.rows import to_row


def read(split, root, **options):
    task = get_task("snli")
    return list(task.read(split, task.files(split, root), task.make_options(options)))


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("snli")
    examples = read("train", fixture_corpora)
    row = to_row(task, "train", examples[0])
    assert row["id"] == "train-1"
    assert row["context"] == 'premise: "a dog runs across a snowy field."'
    assert row["question"] == 'hypothesis: "an animal is outside." -- entailment, neutral, or contradiction?'
    assert row["answer"] == "entailment"
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert task.group == "nli" and task.metric == "em" and set(task.splits) == {"train", "validation", "test"}


def test_unlabelled_records_and_test_split(fixture_corpora):
    validation = read("validation", fixture_corpora)
    assert [type(r) for r in validation] == [Example, Dropped, Example]
    assert validation[1].reason == "no_gold_label" and validation[1].detail == "900101.jpg#2r1n"
    assert read("validation", fixture_corpora, exclude_unlabelled=False)[1].answer == "-"
    assert [e.answer for e in read("test", fixture_corpora)] == ["entailment", "neutral"]


@pytest.mark.corpora
def test_real_snli_samples(shared_corpora):
    files = sorted((shared_corpora / "snli/samples").glob("*.jsonl"))
    if not files:
        pytest.skip("no SNLI samples in the mirror")
    task = get_task("snli")
    for path in files:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        records = list(read_files("validation", [path], task.make_options()))
        assert len(records) == len(lines), path.name
        for line, record in zip(lines, records):
            raw = json.loads(line)
            if raw["gold_label"] == "-":
                assert isinstance(record, Dropped) and record.reason == "no_gold_label"
                continue
            assert record.context == f'Premise: "{raw["sentence1"]}"'
            assert record.question == f'Hypothesis: "{raw["sentence2"]}" -- entailment, neutral, or contradiction?'
            assert record.answer == raw["gold_label"]
    first = next(read_files("validation", [shared_corpora / "snli/samples/snli_dev.jsonl"], task.make_options()))
    assert (first.context, first.answer) == ('Premise: "People on bicycles waiting at an intersection."', "neutral")
