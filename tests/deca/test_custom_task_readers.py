"""Custom tasks read with a registered task's reader and split by group (Table 3's SQuAD-derived task)."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from deca.checks import load_params
from deca.config import Params, from_dict
from deca.custom_tasks import declare
from deca.errors import ConfigError, DataError
from deca.registry import get_task
from tests.conftest import ROOT

SHARED_SQUAD = ROOT.parent / "shared" / "corpora" / "squad" / "dev-v1.1.json"


@pytest.fixture(autouse=True)
def no_custom_tasks_after():
    yield
    declare(Params())


def squad_file(tmp_path: Path, articles: dict[str, int]) -> Path:
    """A SQuAD v1.1 file with these articles (title -> questions), one paragraph each."""
    data = [{"title": title, "paragraphs": [{"context": f"{title} is a place .", "qas": [
        {"id": f"{title}-{i}", "question": f"what is {title} ? {i}", "answers": [{"text": title, "answer_start": 0}]}
        for i in range(n)]}]} for title, n in articles.items()]
    path = tmp_path / "squad.json"
    path.write_text(json.dumps({"data": data, "version": "1.1"}), encoding="utf-8")
    return path


def declared(**spec) -> object:
    declare(from_dict(Params, {"custom_tasks": {"squad_part": spec}}))
    return get_task("squad_part")


def read(task, split: str) -> list:
    return list(task.read(split, task.files(split, "unused"), task.make_options()))


def test_squad_reader_split_by_article(tmp_path):
    path = squad_file(tmp_path, {"alpha": 2, "beta": 1, "gamma": 3, "delta": 1})
    task = declared(metric="nf1", reader="squad", files={"train": str(path), "validation": str(path)},
                    groups={"train": [0, 2], "validation": [2, None]})
    train, held_out = read(task, "train"), read(task, "validation")
    assert [e.id for e in train] == ["alpha-0", "alpha-1", "beta-0"]
    assert [e.id for e in held_out] == ["gamma-0", "gamma-1", "gamma-2", "delta-0"]
    assert held_out[0].answer == "gamma" and held_out[0].question == "what is gamma ? 0"  # cast as squad casts
    assert task.row_hook is get_task("squad").row_hook  # so training contexts over 400 tokens are dropped
    assert task.make_options().max_train_context_tokens == 400


def test_a_split_without_groups_keeps_every_example(tmp_path):
    path = squad_file(tmp_path, {"alpha": 2, "beta": 1})
    task = declared(reader="squad", files={"train": str(path), "validation": str(path)}, groups={"train": [0, 1]})
    assert len(read(task, "train")) == 2 and len(read(task, "validation")) == 3


def test_prepare_writes_the_article_split(tmp_path):
    from pipelines.prepare import make_job, run

    path = squad_file(tmp_path, {"alpha": 2, "beta": 1, "gamma": 3})
    params = from_dict(Params, {"custom_tasks": {"squad_part": {
        "metric": "nf1", "reader": "squad", "files": {"train": str(path), "validation": str(path)},
        "groups": {"train": [0, 2], "validation": [2, 3]}}}})
    declare(params)
    run(make_job(["squad_part"], tmp_path / "raw", tmp_path / "out", params.prepare), params.prepare)
    rows = pq.read_table(tmp_path / "out" / "squad_part" / "validation").to_pylist()
    assert sorted(r["id"] for r in rows) == ["gamma-0", "gamma-1", "gamma-2"]
    assert len(pq.read_table(tmp_path / "out" / "squad_part" / "train")) == 3


@pytest.mark.parametrize("spec, words", [
    ({"reader": "squadd"}, "did you mean squad"),
    ({"reader": "squad", "fields": {"context": "passage"}}, "fields and question apply to jsonl files only"),
    ({"reader": "squad", "groups": {"test": [0, 1]}}, "groups.test: no such split"),
    ({"reader": "squad", "groups": {"train": 2448}}, r"not \[start, stop\]"),
    ({"reader": "squad", "groups": {"train": [0, 1, 2]}}, r"not \[start, stop\]"),
    ({"reader": "squad", "groups": {"train": [4, 2]}}, "selects no group"),
])
def test_bad_reader_or_groups_are_config_errors(spec, words):
    with pytest.raises(ConfigError, match=words):
        declared(files={"train": "a.json"}, **spec)


def test_groups_need_a_reader_that_gives_groups(tmp_path):
    path = tmp_path / "qa.jsonl"
    path.write_text('{"context": "c", "question": "q", "answer": "a"}\n', encoding="utf-8")
    task = declared(files={"train": str(path)}, groups={"train": [0, 1]})
    with pytest.raises(DataError, match="gives examples no group"):
        read(task, "train")


def test_a_missing_file_names_the_file(tmp_path):
    task = declared(reader="squad", files={"train": str(tmp_path / "absent.json")})
    with pytest.raises(DataError, match="absent.json"):
        read(task, "train")


def test_table3_overlay_declares_the_squad_dev_split():
    """infra/params/table3.yaml's squad_dev on the real development set: 40 articles to train on, 8 held out."""
    if not SHARED_SQUAD.is_file():
        pytest.skip(f"real SQuAD development set not found at {SHARED_SQUAD}")
    import yaml

    overlay = yaml.safe_load((ROOT / "infra" / "params" / "table3.yaml").read_text(encoding="utf-8"))
    spec = {**overlay["custom_tasks"]["squad_dev"],
            "files": {s: str(SHARED_SQUAD) for s in ("train", "validation")}}
    declare(from_dict(Params, {"custom_tasks": {"squad_dev": spec}}))
    task = get_task("squad_dev")
    train, held_out = read(task, "train"), read(task, "validation")
    assert (len(train), len(held_out)) == (8981, 1589)  # 10,570 questions of 48 articles
    assert not {e.group for e in train} & {e.group for e in held_out}
    assert len({e.group for e in held_out}) == 8


def test_table3_params_load(tmp_path):
    """experiments/table3.py's merged params (params.yaml + glove + table3 overlays) load and declare squad_dev."""
    from experiments import table3

    path = table3.write_params(tmp_path, [], ["train.iterations=100"])
    params = load_params(path)
    assert params.train.iterations == 100 and params.train.tasks[0] == "squad_dev"
    assert params.custom_tasks["squad_dev"].reader == "squad"


def test_a_slice_past_the_last_group_names_the_file_and_the_count(tmp_path):
    path = squad_file(tmp_path, {"alpha": 1, "beta": 1})
    task = declared(reader="squad", files={"validation": str(path)}, groups={"validation": [5, 9]})
    with pytest.raises(DataError, match=r"selects no example: the file has 2 groups"):
        read(task, "validation")
