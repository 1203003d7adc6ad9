"""Example inputs per task (infer/serve/examples.py): one for every registered task, asked as the task asks."""
from __future__ import annotations

import re

import pytest

from deca.registry import Dropped, all_tasks
from tests.conftest import FIXTURE_CORPORA
from infer.serve.examples import example_for, task_examples


def fixture_questions(name: str) -> list[str]:
    """The questions the task's reader makes of its bundled fixture corpus (its first split that has one)."""
    task = all_tasks()[name]
    for split in task.splits:
        files = task.files(split, FIXTURE_CORPORA)
        if all(f.exists() for f in files):
            return [e.question for e in task.read(split, files, task.make_options()) if not isinstance(e, Dropped)]
    pytest.skip(f"no fixture corpus for {name}")


def test_every_registered_task_has_an_example():
    listed = task_examples()
    assert [e["task"] for e in listed] == list(all_tasks())  # registry order, none left out
    for e in listed:
        assert e["context"].strip() and e["question"].strip() and e["expected"].strip(), e


@pytest.mark.parametrize("name", [n for n in all_tasks() if n.split(".")[0] in
                                  ("sst", "amazon", "yelp", "imdb_uci", "woz", "wikisql", "cnn_dailymail", "iwslt")])
def test_fixed_questions_are_the_tasks_own(name):
    """Tasks that ask one question of every example: the example asks exactly that question."""
    questions = set(fixture_questions(name))
    assert len(questions) == 1, questions
    assert example_for(name).question == questions.pop()


@pytest.mark.parametrize("name", ["multinli.in.out", "snli", "multinli.fiction"])
def test_nli_examples_follow_the_template(name):
    ex = example_for(name)
    template = re.compile(r'Hypothesis: "[^"]+" -- entailment, neutral, or contradiction\?')
    assert template.fullmatch(ex.question) and ex.context.startswith('Premise: "')
    assert all(template.fullmatch(q) for q in fixture_questions(name))
    assert ex.expected in ("entailment", "neutral", "contradiction")


def test_renamed_labels_rename_question_and_answer():
    ex = example_for("sst.happy_angry")
    assert ex.question == "Is this review angry or happy?" and ex.expected == "happy"
    assert set(fixture_questions("sst.happy_angry")) == {ex.question}
    assert example_for("yelp.supportive_unsupportive").expected == "supportive"


def test_wikisql_context_names_the_columns_and_key_words():
    ex = example_for("wikisql")
    fixture = all_tasks()["wikisql"]
    split = next(s for s in fixture.splits if all(f.exists() for f in fixture.files(s, FIXTURE_CORPORA)))
    real = next(fixture.read(split, fixture.files(split, FIXTURE_CORPORA), fixture.make_options()))
    # same shape as the corpus: columns, the same key words, then '-- ' and the question
    assert ex.context.split(" and key words ")[1].split("-- ")[0] == real.context.split(" and key words ")[1].split("-- ")[0]
    assert ex.expected.startswith("SELECT ") and " FROM table" in ex.expected


def test_an_unknown_task_has_no_example():
    assert example_for("no.such.task") is None
