"""Custom tasks declared in params.yaml (deca/custom_tasks.py): declaration, reading, bad records, prepare."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from deca.checks import load_params, params_from_args
from deca.config import Params, from_dict
from deca.custom_tasks import declare
from deca.errors import ConfigError, DataError
from deca.registry import all_tasks, get_task, resolve_tasks
from tests.conftest import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "custom"
SPEC = {"metric": "nf1", "fields": {"context": "passage"},
        "files": {"train": str(FIXTURE / "qa.train.jsonl"), "validation": str(FIXTURE / "qa.validation.jsonl")}}


def params_with(**custom) -> Params:
    """Params with these custom tasks, declared."""
    params = from_dict(Params, {"custom_tasks": custom})
    declare(params)
    return params


def custom_names() -> list[str]:
    return [n for n, t in all_tasks().items() if t.group == "custom"]


@pytest.fixture(autouse=True)
def no_custom_tasks_after():
    yield
    declare(Params())  # default params declare no custom task


def test_declared_task_is_registered_and_replaced_by_the_next_params():
    params_with(minqa=SPEC)
    task = get_task("minqa")
    assert task.group == "custom" and task.metric == "nf1" and set(task.splits) == {"train", "validation"}
    assert task.module == "deca.custom_tasks"
    assert "minqa" in resolve_tasks("all")
    params_with(otherqa=SPEC)
    assert "minqa" not in all_tasks() and "otherqa" in all_tasks()
    declare(Params())
    assert not custom_names()


def test_building_params_registers_nothing(tmp_path):
    params_with(otherqa=SPEC)
    params = from_dict(Params, {"custom_tasks": {"minqa": SPEC}})
    Params(custom_tasks=params.custom_tasks)
    Params()
    path = tmp_path / "params.yaml"
    path.write_text(f"custom_tasks: {json.dumps({'minqa': SPEC})}\n", encoding="utf-8")
    assert "minqa" in load_params(path).custom_tasks  # loading checks them, registers nothing
    assert custom_names() == ["otherqa"]


def test_the_params_of_a_command_declare_their_custom_tasks(tmp_path):
    import argparse

    path = tmp_path / "params.yaml"
    path.write_text(f"custom_tasks: {json.dumps({'minqa': SPEC})}\n", encoding="utf-8")
    params_from_args(argparse.Namespace(params=str(path), overrides=[]))
    assert custom_names() == ["minqa"]
    params_from_args(argparse.Namespace(params=str(tmp_path / "absent.yaml"), overrides=[]))  # the defaults
    assert custom_names() == []


def test_loading_params_checks_custom_tasks_without_registering(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text(f"custom_tasks: {json.dumps({'sst': SPEC})}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="custom_tasks.sst: a registered task has that name"):
        load_params(path)
    assert get_task("sst").group != "custom"


@pytest.mark.parametrize("name, spec, words", [
    ("my.qa", SPEC, "lowercase letters, digits and '_'"),
    ("sst", SPEC, "a registered task has that name"),
    ("qa", {**SPEC, "files": {}}, "at least one split"),
    ("qa", {**SPEC, "files": {"dev": "x.jsonl"}}, "unknown split or field"),
    ("qa", {**SPEC, "fields": {"passage": "context"}}, "unknown split or field"),
    ("qa", {**SPEC, "metric": "joint_goal_em"}, "needs a task's own gold"),
    ("qa", {**SPEC, "metrc": "em"}, "did you mean 'metric'"),
])
def test_bad_declarations_are_config_errors(name, spec, words):
    with pytest.raises(ConfigError, match=words.replace("(", r"\(").replace(".", r"\.")):
        params_with(**{name: spec})


def test_params_file_declares_custom_tasks(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("custom_tasks:\n  minqa:\n    metric: nf1\n    files: {validation: v.jsonl}\n", encoding="utf-8")
    params = load_params(path)
    assert params.custom_tasks["minqa"].files == {"validation": "v.jsonl"}
    declare(params)
    assert get_task("minqa").files("validation", "data/raw") == [Path("v.jsonl")]  # not under the raw dir


def read(spec: dict, split: str, path: Path) -> list:
    params_with(qa={**spec, "files": {split: str(path)}})
    task = get_task("qa")
    return list(task.read(split, task.files(split, "unused"), task.make_options()))


def test_fixture_reads_with_field_mapping_and_gold_lists():
    examples = read(SPEC, "validation", FIXTURE / "qa.validation.jsonl")
    assert [e.id for e in examples] == ["v0", "v1", "v2", "v3"]
    assert examples[0].context.startswith("The choir") and examples[0].question == "When does the choir rehearse?"
    assert examples[0].answer == "every Tuesday" and examples[0].answers == ["every Tuesday", "Tuesday"]
    assert examples[1].answers == ["Oslo"]


def test_default_question_and_line_number_ids(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"de": "guten morgen", "en": "good morning"}\n\n{"de": "danke", "en": "thanks"}\n')
    spec = {"metric": "bleu", "fields": {"context": "de", "answer": "en"}, "question": "Translate from German to English"}
    examples = read(spec, "train", path)
    assert [(e.id, e.question, e.answer) for e in examples] == [
        ("1", "Translate from German to English", "good morning"), ("3", "Translate from German to English", "thanks")]


GOOD = '{"passage": "a b", "question": "q?", "answer": "a"}'


@pytest.mark.parametrize("line, words", [
    ('{"passage": "a b", "question": "q?", "answer": ', "invalid JSON"),
    ('["a", "b"]', "expected a JSON object"),
    ('{"question": "q?", "answer": "a"}', "record has no 'passage' field"),
    ('{"passage": "a b", "answer": "a"}', "no 'question' field and custom_tasks.qa.question is not set"),
    ('{"passage": 3, "question": "q?", "answer": "a"}', "field 'passage' must be a string"),
    ('{"passage": "a b", "question": "q?", "answer": []}', "non-empty list of strings"),
    ('{"passage": "a b", "question": "q?", "answer": ["a", 2]}', "non-empty list of strings"),
    ('{"passage": "a b", "question": "q?", "answer": "a", "id": true}', "string or an integer"),
    ('{"passage": "a b", "question": "q?", "answer": "a", "id": "1"}', "id '1' given twice"),
    ('{"passage": "a b", "question": "q?", "answer": ["a", "\\ud800"]}',
     "field 'answer[1]': a lone surrogate \\ud800 at character 1, not text"),
    ('[' * 100_000 + ']' * 100_000, "JSON nested too deeply"),
])
def test_bad_record_names_file_and_line(tmp_path, line, words):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(json.loads(GOOD) | {"id": "1"}) + "\n" + line + "\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        read(SPEC, "train", path)
    assert f"{path}:2:" in str(err.value) and words in str(err.value) and "fix:" in str(err.value)


def test_invalid_utf8_and_missing_file(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + b'{"passage": "caf\xe9"}\n')
    with pytest.raises(DataError, match=r"bad\.jsonl:2: not valid UTF-8"):
        read(SPEC, "train", path)
    with pytest.raises(DataError, match="train file not found"):
        read(SPEC, "train", tmp_path / "absent.jsonl")


def test_prepare_writes_the_custom_task_like_a_registered_one(tmp_path):
    from pipelines.prepare import make_job, run

    params = params_with(minqa=SPEC)
    run(make_job(["minqa"], tmp_path / "raw", tmp_path / "out", params.prepare), params.prepare)
    rows = pq.read_table(tmp_path / "out" / "minqa" / "validation").to_pylist()
    assert len(rows) == 4 and rows[0]["task"] == "minqa"
    assert rows[0]["question_tokens"] == [" when ", " does ", " the ", " choir ", " rehearse ", "? "]
    assert rows[0]["answers"] == ["every tuesday", "tuesday"]


def test_prepare_names_a_missing_custom_file(tmp_path):
    from pipelines.prepare import check_raw_files, make_job

    params = params_with(minqa={**SPEC, "files": {"train": str(tmp_path / "nope.jsonl")}})
    with pytest.raises(DataError, match="change custom_tasks.minqa in params.yaml"):
        check_raw_files(make_job(["minqa"], tmp_path, tmp_path / "out", params.prepare))


def test_an_empty_file_is_the_users_own_not_a_download(tmp_path):
    from pipelines.prepare import make_job, run

    path = tmp_path / "dev.jsonl"
    path.write_text("")
    params = params_with(minqa={**SPEC, "files": {"validation": str(path)}})
    with pytest.raises(DataError) as err:  # through `deca prepare`: refused before the Beam job
        run(make_job(["minqa"], tmp_path / "raw", tmp_path / "out", params.prepare), params.prepare)
    text = str(err.value)
    assert "download" not in text and not (tmp_path / "out").exists()
    assert text.splitlines() == [
        f"{path}: the validation file of your custom task 'minqa' (custom_tasks.minqa.files.validation in "
        "params.yaml) is empty: it holds no example",
        '  fix: put one JSON object per line in it, e.g. {"passage": "...", "question": "...", "answer": "..."}; '
        "or point custom_tasks.minqa.files.validation at the file that has them"]
    path.write_text("\n  \n")  # blank lines only: the reader says the same
    spec = {"metric": "bleu", "fields": {"context": "de", "answer": "en"}, "question": "Translate"}
    with pytest.raises(DataError, match=r"'qa' .* has only blank lines[\s\S]*e\.g\. \{\"de\": \"...\", \"en\": \"...\"\};"):
        read(spec, "train", path)


def test_unknown_metric_fails_before_training_or_evaluation():
    from eval.api import check_metrics

    params_with(minqa={**SPEC, "metric": "nf2"})
    with pytest.raises(ConfigError, match="task 'minqa': unknown metric 'nf2'"):
        check_metrics(["minqa"])


def test_prepare_names_a_lone_surrogate_in_a_record(tmp_path, capsys):
    import yaml

    from deca.cli import main

    path = tmp_path / "dev.jsonl"
    path.write_text(GOOD + "\n" + GOOD.replace("a b", "a \\ud800 b") + "\n", encoding="utf-8")
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"custom_tasks": {"minqa": {**SPEC, "files": {"validation": str(path)}}},
                                      "data": {"raw_dir": str(tmp_path / "raw"),
                                               "processed_dir": str(tmp_path / "out")}}))
    assert main(["prepare", "--params", str(params), "--tasks", "minqa"]) == 1
    err = capsys.readouterr().err
    assert f"error: {path}:2: field 'passage': a lone surrogate \\ud800 at character 3, not text" in err
    assert "Traceback" not in err and not (tmp_path / "out" / "minqa").exists()
