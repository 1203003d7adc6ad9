"""WikiSQL lfEM / unordered LF / execution accuracy: parsing edge cases and a small SQLite database."""
from __future__ import annotations

import sqlite3

import pytest

from eval.metrics.wikisql import logical_form_metrics, parse_logical_form

AGG = ["", "MAX", "MIN", "COUNT", "SUM", "AVG"]
OPS = ["=", ">", "<", "OP"]
HEADER = ["Player", "No.", "Nationality", "Position", "Years in Toronto", "School/Club Team"]


def render(sql: dict, header: list[str]) -> str:
    """The answer string as decaNLP writes it (WikiSQL Query repr with header names), lowercased."""
    s = f"SELECT {AGG[sql['agg']]} {header[sql['sel']]} FROM table"
    if sql["conds"]:
        s += " WHERE " + " AND ".join(f"{header[c]} {OPS[o]} {v}" for c, o, v in sql["conds"])
    return " ".join(s.split()).lower()


def gold(sql, header=HEADER, table_id="1-10015132-11"):
    return {"sql": sql, "header": header, "table_id": table_id}


def score(preds, golds, **kw):
    return logical_form_metrics(preds, golds, **kw)


def test_round_trip_of_the_gold_string():
    sql = {"sel": 3, "agg": 0, "conds": [[5, 0, "Butler CC (KS)"]]}
    text = render(sql, HEADER)
    assert text == "select position from table where school/club team = butler cc (ks)"
    assert parse_logical_form(text, HEADER) == {"sel": 3, "agg": 0, "conds": [[5, 0, "butler cc (ks)"]]}
    assert score([text], [gold(sql)]) == {"lfem": 100.0, "lf_unordered": 100.0}


def test_agrees_with_the_task_modules_rendering():
    wikisql = pytest.importorskip("deca.tasks.wikisql")
    sql = {"sel": 0, "agg": 3, "conds": [[4, 0, "1996-97"], [1, 1, 25.0]]}
    text = wikisql.logical_form(sql, HEADER).lower()
    assert text == render(sql, HEADER)
    assert score([text], [gold(sql)])["lfem"] == 100.0


def test_aggregation_and_numeric_gold_values():
    sql = {"sel": 1, "agg": 3, "conds": [[4, 0, 1996], [1, 1, 25.0]]}
    text = "select count no. from table where years in toronto = 1996 and no. > 25.0"
    assert parse_logical_form(text, HEADER) == {"sel": 1, "agg": 3, "conds": [[4, 0, "1996"], [1, 1, "25.0"]]}
    assert score([text], [gold(sql)])["lfem"] == 100.0
    assert score([text.replace("25.0", "25")], [gold(sql)])["lfem"] == 0.0  # str(25.0) is "25.0"


def test_columns_containing_the_word_where():
    header = ["Where played", "Nowhere man", "Score"]
    sql = {"sel": 0, "agg": 0, "conds": [[1, 0, "somewhere"], [2, 1, "3"]]}
    text = render(sql, header)
    assert text == "select where played from table where nowhere man = somewhere and score > 3"
    # decaNLP's `s.split('where', 1)` would cut inside "where played"; the header-anchored parse does not.
    assert parse_logical_form(text, header) == {"sel": 0, "agg": 0, "conds": [[1, 0, "somewhere"], [2, 1, "3"]]}
    assert score([text], [gold(sql, header)])["lfem"] == 100.0


def test_conditions_in_a_different_order():
    sql = {"sel": 0, "agg": 0, "conds": [[2, 0, "Canada"], [3, 0, "Guard"]]}
    swapped = "select player from table where position = guard and nationality = canada"
    assert score([swapped], [gold(sql)]) == {"lfem": 0.0, "lf_unordered": 100.0}


def test_values_containing_and_and_operators():
    header = ["Team", "Year", "Notes"]
    sql = {"sel": 2, "agg": 0, "conds": [[0, 0, "Tom and Jerry"], [1, 2, "1990"]]}
    text = render(sql, header)
    assert parse_logical_form(text, header)["conds"] == [[0, 0, "tom and jerry"], [1, 2, "1990"]]
    sql_op = {"sel": 2, "agg": 0, "conds": [[0, 3, "x = y"]]}
    assert score([render(sql_op, header)], [gold(sql_op, header)])["lfem"] == 100.0


def test_header_that_starts_with_an_aggregation_name():
    header = ["Points", "Max points"]
    # A whole header wins over agg + header (decaNLP's order); the agg reading is still available.
    assert parse_logical_form("select max points from table", header) == {"sel": 1, "agg": 0, "conds": []}
    assert parse_logical_form("select max points from table where points > 3", header)["sel"] == 1
    assert parse_logical_form("select min points from table", header) == {"sel": 0, "agg": 2, "conds": []}


def test_whitespace_in_headers_and_duplicate_column_names():
    header = ["Years  in Toronto", "Name", "Name"]
    assert parse_logical_form("select years in toronto from table", header)["sel"] == 0
    sql = {"sel": 2, "agg": 0, "conds": []}  # the second "Name": indistinguishable from the first
    assert score(["select name from table"], [gold(sql, header)])["lfem"] == 100.0


@pytest.mark.parametrize("bad", [
    "", "none", "select from table", "select banana from table", "select player from table where",
    "select player from table where banana = 3", "select player from table where player", "select player",
    "select sum from table", "player = 3",
])
def test_unparseable_predictions_count_as_wrong(bad):
    sql = {"sel": 0, "agg": 0, "conds": [[0, 0, "3"]]}
    assert parse_logical_form(bad, HEADER) is None
    assert score([bad], [gold(sql)]) == {"lfem": 0.0, "lf_unordered": 0.0}


def test_a_dangling_and_stays_in_the_value():
    text = "select player from table where player = 3 and"
    assert parse_logical_form(text, HEADER)["conds"] == [[0, 0, "3 and"]]
    assert score([text], [gold({"sel": 0, "agg": 0, "conds": [[0, 0, "3"]]})])["lfem"] == 0.0


def test_hand_computed_average():
    sql = {"sel": 0, "agg": 0, "conds": [[2, 0, "Canada"], [3, 0, "Guard"]]}
    preds = ["select player from table where nationality = canada and position = guard",
             "select player from table where position = guard and nationality = canada",
             "select count player from table where nationality = canada and position = guard",
             "garbage"]
    m = score(preds, [gold(sql)] * 4)
    assert m == {"lfem": 25.0, "lf_unordered": 50.0}


def _make_db(path):
    """A WikiSQL-format database: one table, columns col0..colN, types in the CREATE statement."""
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE table_1_2_3 (col0 text, col1 real, col2 text)")
    conn.executemany("INSERT INTO table_1_2_3 VALUES (?, ?, ?)", [
        ("alice", 10.0, "canada"), ("bob", 20.0, "canada"), ("carol", 30.0, "usa"), ("dave", 1200.0, "usa"),
    ])
    conn.commit()
    conn.close()


def test_execution_accuracy(tmp_path):
    db = tmp_path / "dev.db"
    _make_db(db)
    header = ["Name", "Score", "Country"]
    g = gold({"sel": 0, "agg": 0, "conds": [[2, 0, "Canada"], [1, 1, "15"]]}, header, table_id="1-2-3")
    g_count = gold({"sel": 0, "agg": 3, "conds": [[1, 1, "1,000"]]}, header, table_id="1-2-3")
    preds = [
        "select name from table where country = canada and score > 15",  # exact
        "select name from table where score > 15 and score < 25",  # other LF, same rows (bob)
        "select name from table where country = usa",  # wrong
        "select count name from table where score > 1,000",  # REAL column: "1,000" -> 1000.0
    ]
    m = score(preds, [g, g, g, g_count], db_path=str(db))
    assert m["lfem"] == 50.0
    # Pred 2 has two conditions on `score`: as in WikiSQL's DBEngine both are bound to the last value
    # (score > 25 and score < 25), so it returns nothing -> wrong.
    assert m["exec_acc"] == 50.0
    assert score([preds[1].replace("score < 25", "country = canada")], [g], db_path=str(db))["exec_acc"] == 100.0


def test_execution_errors_count_as_wrong(tmp_path):
    db = tmp_path / "dev.db"
    _make_db(db)
    header = ["Name", "Score", "Country"]
    g = gold({"sel": 0, "agg": 0, "conds": [[1, 0, "10"]]}, header, table_id="1-2-3")
    missing_table = gold({"sel": 0, "agg": 0, "conds": []}, header, table_id="9-9-9")
    m = score(["select name from table where score = ten", "select name from table"], [g, missing_table],
              db_path=str(db))
    assert m["exec_acc"] == 0.0
