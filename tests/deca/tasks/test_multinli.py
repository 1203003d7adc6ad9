import json
import shutil

import pytest

from deca.errors import DataError
from deca.registry import Dropped, Example, get_task, resolve_tasks
from deca.tasks.multinli import MISMATCHED_GENRES, TRAIN_GENRES
from deca.text import detokenize
from pipelines.rows import to_row


def read(name, split, root, **options):
    task = get_task(name)
    return list(task.read(split, task.files(split, root), task.make_options(options)))


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("multinli.in.out")
    examples = read("multinli.in.out", "train", fixture_corpora)
    assert examples[0].context == 'Premise: "The old lighthouse keeper wrote a letter every night."'
    assert examples[0].question == 'Hypothesis: "The keeper wrote letters." -- entailment, neutral, or contradiction?'
    row = to_row(task, "train", examples[0])
    assert row["id"] == "train-1"
    assert row["context"] == 'premise: "the old lighthouse keeper wrote a letter every night."'
    assert row["question"] == 'hypothesis: "the keeper wrote letters." -- entailment, neutral, or contradiction?'
    assert row["answer"] == "entailment" and row["answers"] == ["entailment"]
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert task.metric == "em" and "test" not in task.splits


def test_validation_is_matched_then_mismatched_and_dashes_are_counted_drops(fixture_corpora):
    records = read("multinli.in.out", "validation", fixture_corpora)
    assert [r.id for r in records][:1] == ["dev_matched-1"] and records[-1].id == "dev_mismatched-6"
    drops = [r for r in records if isinstance(r, Dropped)]
    assert [(d.id, d.reason, d.detail) for d in drops] == [("dev_matched-3", "no_gold_label", "81003e"),
                                                           ("dev_mismatched-4", "no_gold_label", "82004n")]
    kept = read("multinli.in.out", "validation", fixture_corpora, exclude_unlabelled=False)
    assert len(kept) == 12 and all(isinstance(r, Example) for r in kept)
    assert [r.answer for r in kept if r.id in ("dev_matched-3", "dev_mismatched-4")] == ["-", "-"]
    assert len({r.id for r in records}) == len(records)


def test_genre_tasks(fixture_corpora):
    names = resolve_tasks("multinli.*")
    assert sorted(names) == sorted(["multinli.in.out"] + [f"multinli.{g}" for g in TRAIN_GENRES + MISMATCHED_GENRES])
    raw = {}
    for f in ("train", "dev_matched", "dev_mismatched"):
        lines = (fixture_corpora / f"multinli/multinli_1.0/multinli_1.0_{f}.jsonl").read_text().splitlines()
        raw.update({f"{f}-{i}": json.loads(line)["genre"] for i, line in enumerate(lines, 1)})
    validation_total = 0
    for genre in TRAIN_GENRES + MISMATCHED_GENRES:
        task = get_task(f"multinli.{genre}")
        assert task.group == "nli" and task.metric == "em"
        assert set(task.splits) == ({"train", "validation"} if genre in TRAIN_GENRES else {"validation"})
        assert task.eval_only == (genre in MISMATCHED_GENRES)
        for split in task.splits:
            records = read(task.name, split, fixture_corpora)
            assert any(isinstance(r, Example) for r in records), (genre, split)
            assert {raw[r.id] for r in records} == {genre}
            validation_total += len(records) if split == "validation" else 0
    # the genres partition the development sets
    assert validation_total == len(read("multinli.in.out", "validation", fixture_corpora))


def _copy(fixture_corpora, tmp_path):
    shutil.copytree(fixture_corpora / "multinli", tmp_path / "multinli")
    return tmp_path / "multinli/multinli_1.0/multinli_1.0_dev_matched.jsonl"


def test_bad_records_name_file_and_line(fixture_corpora, tmp_path):
    path = _copy(fixture_corpora, tmp_path)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)

    def fails(replaced_line, pattern, task="multinli.in.out"):
        path.write_text("".join(lines[:3] + [replaced_line] + lines[4:]), encoding="utf-8")
        with pytest.raises(DataError, match=pattern) as exc:
            read(task, "validation", tmp_path)
        assert (exc.value.path, exc.value.line) == (str(path), 4)

    fails(lines[3][:50] + "\n", "invalid JSON")
    fails(lines[3].replace('"gold_label": "neutral"', '"gold_label": "maybe"'), "unknown gold_label 'maybe'")
    record = json.loads(lines[3])
    del record["sentence2"]
    fails(json.dumps(record) + "\n", "no 'sentence2' field")
    del record["genre"]
    fails(json.dumps(record) + "\n", "no 'genre' field", task="multinli.slate")
    fails("[1, 2]\n", "expected a JSON object")
    path.write_bytes("".join(lines).encode().replace(b"senator", b"sen\x80ator"))
    with pytest.raises(DataError, match="UTF-8") as exc:
        read("multinli.slate", "validation", tmp_path)
    assert exc.value.line == 4
