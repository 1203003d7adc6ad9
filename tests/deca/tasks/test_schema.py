import importlib.util

import pytest

from deca.registry import get_task
from deca.tasks.schema import resolve
from tests.conftest import FIXTURE_CORPORA, ROOT, shared_file
from tests.deca.tasks._check import read_split, row_of

TASK = get_task("schema")


def test_fixture_example_end_to_end(fixture_corpora):
    examples, drops = read_split(TASK, "train", fixture_corpora)
    assert not drops and len(examples) == 80
    row = row_of(TASK, "train", examples[1])
    assert row["id"] == "schema0-1"
    assert row["context"] == "the trophy would not fit in the brown case because it was too small."
    assert row["question"] == "what was too small? trophy or case?"
    assert row["answer"] == "case"
    # a question without a choice is the same for both examples of its schema
    assert [e.question for e in examples[2:4]] == ["Who had helped? Ruth or Maria?"] * 2
    assert [e.answer for e in examples[2:4]] == ["Ruth", "Maria"]


def test_fixture_splits_follow_decanlp_positions(fixture_corpora):
    splits = {s: read_split(TASK, s, fixture_corpora) for s in ("train", "validation", "test")}
    assert {s: len(ex) for s, (ex, _) in splits.items()} == {"train": 80, "validation": 4, "test": 100}
    ids = [e.id for s in ("train", "validation", "test") for e in splits[s][0]]
    assert ids == [f"schema{k}-{c}" for k in range(92) for c in range(2)]
    # the unterminated last schema is reported, once, with the test split
    assert not splits["train"][1] and not splits["validation"][1]
    assert [(d.id, d.reason) for d in splits["test"][1]] == [("schema92-0", "no_blank_line_after_schema"),
                                                              ("schema92-1", "no_blank_line_after_schema")]


def test_each_choice_is_resolved_on_its_own(fixture_corpora):
    examples, _ = read_split(TASK, "train", fixture_corpora)
    assert examples[4].context == "Tom's uncle had moved away, and his farm had been sold by a cousin."
    assert examples[5].question == "Whose school had been closed? uncle's or Tom's?"
    assert resolve("a [b/c] d [e/f]", 1) == "a c d f"


def test_fixture_is_what_its_generator_writes():
    spec = importlib.util.spec_from_file_location("make_schema_fixture", ROOT / "tests/fixtures/make_schema_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.render() == (FIXTURE_CORPORA / "schema/schema.txt").read_text(encoding="utf-8")


@pytest.mark.corpora
def test_real_counts_match_table_1():
    files = [shared_file("schema/schema.txt")]
    for split, n in TASK.paper_counts.items():
        items = list(TASK.read(split, files, TASK.make_options()))
        examples = [e for e in items if hasattr(e, "question")]
        assert len(examples) == n
        drops = [e for e in items if not hasattr(e, "question")]
        assert [d.id for d in drops] == (["schema131-0", "schema131-1"] if split == "test" else [])
    first = next(iter(TASK.read("train", files, None)))
    assert first.context == "The city councilmen refused the demonstrators a permit because they feared violence."
    assert first.question == "Who feared violence? councilmen or demonstrators?"
    assert first.answer == "councilmen"
