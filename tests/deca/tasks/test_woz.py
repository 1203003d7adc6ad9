import json
import shutil

import pytest

from deca.errors import DataError
from deca.registry import Dropped, get_task
from deca.tasks.woz import answer_string
from deca.text import detokenize
from pipelines.rows import to_row
from tests.conftest import shared_file


def read(task_name, split, root):
    task = get_task(task_name)
    return list(task.read(split, task.files(split, root), task.make_options()))


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("woz.en")
    examples = read("woz.en", "train", fixture_corpora)
    row = to_row(task, "train", examples[0])
    assert row["id"] == "en_0_0"
    assert row["question"] == "what is the change in state?"
    assert row["context"] == "i want a cheap restaurant in the north of town."
    assert row["answer"] == "price range: cheap, area: north;" and row["answers"] == [row["answer"]]
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert json.loads(row["gold"]) == {"dialogue_id": "en_0", "turn": 0,
                                       "state": {"price range": "cheap", "area": "north"}, "requests": []}


def test_answers_contexts_and_gold_state_follow_decanlp(fixture_corpora):
    examples = read("woz.en", "train", fixture_corpora)
    first = [e for e in examples if e.id.startswith("en_0_")]
    assert [e.answer for e in first] == [
        "price range: cheap, area: north;", "food: dontcare;", "; address", "food: italian;", "None",
        "; phone, postcode", "area: west;", "price range: moderate;", "; name, address", "None",
        "food: chinese;", "; phone", "None"]
    assert first[1].context == "food -- Any kind of food is fine."  # a bare-slot system act
    assert first[4].context == "area: north -- Yes, that's fine."  # a [slot, value] system act
    # 13 turns, in numeric order (decaNLP's string sort put _10 before _2)
    assert [e.id for e in first] == [f"en_0_{i}" for i in range(13)]
    assert [e.gold["turn"] for e in first] == list(range(13))
    assert first[12].gold["state"] == {"price range": "moderate", "area": "west", "food": "chinese"}
    assert first[5].gold["requests"] == ["phone", "postcode"]
    assert {e.gold["dialogue_id"] for e in examples} == {"en_0", "en_1"}
    # informs and requests in one turn
    validation = read("woz.en", "validation", fixture_corpora)
    assert validation[1].answer == "price range: dontcare; address"
    assert len({e.id for e in examples}) == len(examples)


def test_answer_string_formats():
    assert answer_string([["food", "thai"], ["area", "east"]], ["phone"]) == "food: thai, area: east; phone"
    assert answer_string([], ["phone", "address"]) == "; phone, address"
    assert answer_string([["food", "thai"]], []) == "food: thai;"
    assert answer_string([], []) == "None"


def test_german_task(fixture_corpora):
    task = get_task("woz.de")
    examples = read("woz.de", "test", fixture_corpora)
    row = to_row(task, "test", examples[0])
    assert row["id"] == "de_0_0" and row["answer"] == "gegend: süden; telefon"
    assert row["question"] == "what is the change in state?"
    assert task.metric == get_task("woz.en").metric == "joint_goal_em"


def _parse_delta(answer):
    """decaNLP's to_delta_state on a gold string: ';' splits informs from requests, ',' items, ':' pairs."""
    if answer.lower() == "none":
        return {}
    informs, _ = answer.split(";")
    pairs = (item.split(":") for item in informs.split(",") if item.strip())
    return {k.strip(): v.strip() for k, v in pairs}


@pytest.mark.corpora
@pytest.mark.parametrize("name", ["woz.en", "woz.de"])
def test_real_counts_match_table_1(name):
    task = get_task(name)
    for split, n in {"train": 2536, "validation": 830, "test": 1646}.items():
        files = [shared_file(rel) for rel in task.splits[split]]
        examples = list(task.read(split, files, task.make_options()))
        assert len(examples) == n and not any(isinstance(e, Dropped) for e in examples)
        assert len({e.id for e in examples}) == n
        # the gold state equals decaNLP's accumulation of the parsed gold delta strings
        state, dialogue = {}, None
        for e in examples:
            if e.gold["dialogue_id"] != dialogue:
                state, dialogue = {}, e.gold["dialogue_id"]
            state.update(_parse_delta(e.answer.lower()))
            assert e.gold["state"] == state, e.id


def _copy_fixture(fixture_corpora, tmp_path):
    dest = tmp_path / "woz"
    shutil.copytree(fixture_corpora / "woz", dest)
    return dest / "woz_train_en.json"


def test_truncated_json_names_file_and_line(fixture_corpora, tmp_path):
    path = _copy_fixture(fixture_corpora, tmp_path)
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2], encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON") as exc:
        read("woz.en", "train", tmp_path)
    assert exc.value.path == str(path)
    assert exc.value.line == text[: len(text) // 2].count("\n") + 1


def test_invalid_utf8_names_the_line(fixture_corpora, tmp_path):
    path = _copy_fixture(fixture_corpora, tmp_path)
    data = path.read_bytes()
    at = data.index(b"Thanks.")
    path.write_bytes(data[:at] + b"Thanks\xff." + data[at + len(b"Thanks."):])
    with pytest.raises(DataError, match="UTF-8") as exc:
        read("woz.en", "train", tmp_path)
    assert exc.value.path == str(path) and exc.value.line == data[:at].count(b"\n") + 1


def test_malformed_turn_and_missing_file(fixture_corpora, tmp_path):
    path = _copy_fixture(fixture_corpora, tmp_path)
    dialogues = json.loads(path.read_text(encoding="utf-8"))
    del dialogues[1]["dialogue"][2]["transcript"]
    path.write_text(json.dumps(dialogues), encoding="utf-8")
    with pytest.raises(DataError, match="dialogue 1 turn 2: field 'transcript'") as exc:
        read("woz.en", "train", tmp_path)
    assert exc.value.path == str(path)
    path.unlink()
    with pytest.raises(DataError, match="file not found"):
        read("woz.en", "train", tmp_path)
