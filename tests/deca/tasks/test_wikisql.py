import json
import shutil

import pytest

from deca.errors import DataError
from deca.registry import get_task
from deca.tasks.wikisql import KEYWORDS, logical_form, table_context
from deca.text import detokenize
from pipelines.rows import to_row
from tests.deca.tasks._check import read_records

HEADER = ["Player", "No.", "Nationality", "Position", "Years in Toronto", "School/Club Team"]


def read(split, root):
    return read_records("wikisql", split, root)


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("wikisql")
    examples = read("train", fixture_corpora)
    assert examples[0].context == (
        "The table has columns Player, No., Nationality, Position, Years in Toronto, School/Club Team and key words "
        "MAX, MIN, COUNT, SUM, AVG, =, >, <, OP, SELECT, WHERE, AND, COL, TABLE, CAPTION, PAGE, SECTION, OP, COND, "
        "QUESTION, AGG, AGGOPS, CONDOPS-- How many positions does the player from Butler CC (KS) play?")
    assert examples[0].answer == "SELECT COUNT Position FROM table WHERE School/Club Team = Butler CC (KS)"
    row = to_row(task, "train", examples[0])
    assert row["id"] == "train-0"
    assert row["question"] == "what is the translation from english to sql?"
    assert row["answer"] == "select count position from table where school/club team = butler cc (ks)"
    assert row["context"].endswith("aggops, condops-- how many positions does the player from butler cc (ks) play?")
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert json.loads(row["gold"]) == {"sql": {"sel": 3, "agg": 3, "conds": [[5, 0, "Butler CC (KS)"]]},
                                       "header": HEADER, "table_id": "1-90001-1"}


def test_logical_forms_of_every_split(fixture_corpora):
    assert [e.answer for e in read("train", fixture_corpora)] == [
        "SELECT COUNT Position FROM table WHERE School/Club Team = Butler CC (KS)",
        "SELECT Nationality FROM table WHERE No. = 15",  # numeric value, empty aggregation collapsed
        "SELECT Where held FROM table WHERE Year = 1999 AND Attendance > 10000",
        "SELECT MAX Attendance FROM table",
    ]
    validation = read("validation", fixture_corpora)
    assert validation[0].answer == "SELECT Venue FROM table WHERE Where held = York"  # a column named 'Where ...'
    assert validation[1].answer == "SELECT AVG Year FROM table WHERE Attendance < 9000"
    test = read("test", fixture_corpora)
    assert [e.id for e in test] == ["test-0", "test-1"] and test[1].answer == "SELECT MIN First elected FROM table"


def test_helpers():
    assert KEYWORDS.startswith("MAX, MIN, COUNT, SUM, AVG, =, >, <, OP, SELECT")
    assert KEYWORDS.endswith("AGGOPS, CONDOPS")
    assert table_context(["a", "b"], "q?").endswith("b and key words " + KEYWORDS + "-- q?")
    sql = {"sel": 0, "agg": 0, "conds": [[1, 3, "x  y"]]}
    assert logical_form(sql, ["A  b", "C"]) == "SELECT A b FROM table WHERE C OP x y"


def _copy(fixture_corpora, tmp_path):
    shutil.copytree(fixture_corpora / "wikisql", tmp_path / "wikisql")
    return tmp_path / "wikisql" / "data"


def test_unknown_table_names_question_file_and_line(fixture_corpora, tmp_path):
    data = _copy(fixture_corpora, tmp_path)
    lines = (data / "dev.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines[1] = lines[1].replace("2-90002-3", "9-99999-9")
    (data / "dev.jsonl").write_text("".join(lines), encoding="utf-8")
    with pytest.raises(DataError, match="table '9-99999-9' is not in dev.tables.jsonl") as exc:
        read("validation", tmp_path)
    assert exc.value.path == str(data / "dev.jsonl") and exc.value.line == 2


def test_truncated_line_invalid_utf8_and_bad_indices(fixture_corpora, tmp_path):
    data = _copy(fixture_corpora, tmp_path)
    original = (data / "train.jsonl").read_text(encoding="utf-8")
    lines = original.splitlines(keepends=True)
    (data / "train.jsonl").write_text("".join(lines[:2]) + lines[2][:40], encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON") as exc:
        read("train", tmp_path)
    assert (exc.value.path, exc.value.line) == (str(data / "train.jsonl"), 3)

    bad_sel = json.loads(lines[1])
    bad_sel["sql"]["sel"] = 6
    (data / "train.jsonl").write_text(lines[0] + json.dumps(bad_sel) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match="sel=6 outside") as exc:
        read("train", tmp_path)
    assert exc.value.line == 2

    (data / "train.jsonl").write_text(original, encoding="utf-8")
    tables = (data / "train.tables.jsonl").read_bytes()
    (data / "train.tables.jsonl").write_bytes(tables.replace(b"Fixture Cup", b"Fixture \xc3Cup"))
    with pytest.raises(DataError, match="UTF-8") as exc:
        read("train", tmp_path)
    assert (exc.value.path, exc.value.line) == (str(data / "train.tables.jsonl"), 2)


def test_missing_tables_file(fixture_corpora, tmp_path):
    data = _copy(fixture_corpora, tmp_path)
    (data / "test.tables.jsonl").unlink()
    with pytest.raises(DataError, match="file not found") as exc:
        read("test", tmp_path)
    assert exc.value.path == str(data / "test.tables.jsonl")
