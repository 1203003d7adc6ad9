"""WikiSQL logical-form metrics: lfEM (ordered), unordered LF accuracy, execution accuracy.

The answer string is decaNLP's rendering of WikiSQL's Query:
``select [agg] <column> from table[ where <column> <op> <value>[ and ...]]`` (lowercased, single
spaces; aggs ``max min count sum avg``, ops ``= > < op``). A prediction is parsed back into
``{"sel", "agg", "conds"}`` against the table header and compared with the gold `sql`, whose condition
values are ``str(value).lower()`` as in decaNLP:

- ``lfem``: equal with conditions in order (decaNLP's headline, the "ordered LF" of the README);
- ``lf_unordered``: conditions compared as sets (WikiSQL's official `Query.__eq__`, unordered);
- ``exec_acc``: the predicted and gold queries give the same result on the split's SQLite database
  (WikiSQL's `DBEngine.execute`), when that `.db` file is available.

Parsing differs from decaNLP's `to_lf` where that one scored correct predictions as wrong (documented
project decisions): decaNLP split at the first *substring* ``where``, so any column containing
"where" (e.g. "nowhere", "where played") broke the parse; here the select clause is matched against
the header (``select [agg] <header> from table``) and only the ``where`` that follows ``from table`` starts
the conditions. Headers and values are compared whitespace-normalized (decaNLP compared raw headers
with a whitespace-collapsed string, so a header with a double space never matched). Conditions are
found as ``<header> <op> <value>`` separated by `` and ``; when ``and`` could end a value or belong to it,
the parse that splits earliest is taken (as decaNLP's split on every ``<header> <op>``). Columns with
identical names cannot be told apart in the string: both sides are mapped to the first such column.
Anything that does not parse counts as wrong.
"""
from __future__ import annotations

import re
import sqlite3
from functools import lru_cache
from typing import Any, Mapping, Sequence

from tqdm import tqdm

AGG_OPS = ("", "max", "min", "count", "sum", "avg")
COND_OPS = ("=", ">", "<", "op")
SQL_COND_OPS = ("=", ">", "<", "OP")  # as WikiSQL writes them into SQL


def _norm(text: Any) -> str:
    return " ".join(str(text).lower().split())


def parse_logical_form(prediction: str, header: Sequence[str]) -> dict | None:
    """``{"sel", "agg", "conds": [[col, op, value], ...]}`` from a predicted string, or None if it does not parse."""
    s = _norm(prediction)
    if not s.startswith("select "):
        return None
    headers = _headers(tuple(_norm(h) for h in header))
    rest = s[len("select "):]
    for agg, prefix in [(0, "")] + [(i, a + " ") for i, a in enumerate(AGG_OPS) if a]:
        if not rest.startswith(prefix):
            continue
        for name, col in headers:
            head = prefix + name + " from table"
            if not rest.startswith(head):
                continue
            tail = rest[len(head):]
            if tail == "":
                return {"sel": col, "agg": agg, "conds": []}
            if tail.startswith(" where "):
                conds = _parse_conditions(tail[len(" where "):], headers)
                if conds is not None:
                    return {"sel": col, "agg": agg, "conds": conds}
    return None


@lru_cache(maxsize=4096)
def _headers(normalized: tuple[str, ...]) -> tuple[tuple[str, int], ...]:
    """(name, first index with that name), longest names first, each name once."""
    first: dict[str, int] = {}
    for i, name in enumerate(normalized):
        first.setdefault(name, i)
    return tuple(sorted(first.items(), key=lambda kv: (-len(kv[0]), kv[1])))


def _parse_conditions(text: str, headers: tuple[tuple[str, int], ...]) -> list[list] | None:
    memo: dict[int, list[list] | None] = {}

    def parse_from(pos: int) -> list[list] | None:
        if pos in memo:
            return memo[pos]
        memo[pos] = None
        for name, col in headers:
            if not text.startswith(name + " ", pos):
                continue
            after_col = pos + len(name) + 1
            for op_index, op in enumerate(COND_OPS):
                if not text.startswith(op + " ", after_col):
                    continue
                start = after_col + len(op) + 1
                # The value ends at the first " and " after which the rest parses, else at the end.
                j = text.find(" and ", start + 1)
                while j != -1:
                    rest = parse_from(j + len(" and "))
                    if rest is not None:
                        memo[pos] = [[col, op_index, text[start:j]]] + rest
                        return memo[pos]
                    j = text.find(" and ", j + 1)
                if start < len(text):
                    memo[pos] = [[col, op_index, text[start:]]]
                    return memo[pos]
        return None

    return parse_from(0)


def canonical_gold(sql: Mapping, header: Sequence[str]) -> dict:
    """The gold `sql` as compared: values ``str().lower()`` (whitespace-normalized), columns canonical."""
    return _canonical({"sel": sql["sel"], "agg": sql["agg"],
                       "conds": [[c[0], c[1], _norm(c[2])] for c in sql["conds"]]}, header)


def _canonical(lf: Mapping, header: Sequence[str]) -> dict:
    names = [_norm(h) for h in header]
    first = {}
    for i, name in enumerate(names):
        first.setdefault(name, i)

    def col(i: int) -> int:
        return first.get(names[i], i) if 0 <= i < len(names) else i

    return {"sel": col(int(lf["sel"])), "agg": int(lf["agg"]),
            "conds": [[col(int(c[0])), int(c[1]), c[2]] for c in lf["conds"]]}


def lf_match(predicted: Mapping | None, gold: Mapping, header: Sequence[str], ordered: bool = True) -> bool:
    """Whether a parsed prediction equals the canonical gold (ordered or as a set of conditions)."""
    if predicted is None:
        return False
    p = _canonical(predicted, header)
    g = canonical_gold(gold, header)
    if (p["sel"], p["agg"]) != (g["sel"], g["agg"]):
        return False
    if ordered:
        return p["conds"] == g["conds"]
    return {tuple(c) for c in p["conds"]} == {tuple(c) for c in g["conds"]}


_NUMBER = re.compile(r"[-+]?\d*\.\d+|\d+")


def _to_real(value: Any) -> float:
    """A condition value for a REAL column, as WikiSQL's DBEngine (babel parse_decimal, then the first number)."""
    if isinstance(value, (int, float)):
        return value
    try:
        return float(str(value).replace(",", ""))
    except ValueError:
        found = _NUMBER.findall(str(value))
        if not found:
            raise ValueError(f"no number in condition value {value!r}") from None
        return float(found[0])


class Database:
    """Read-only access to a WikiSQL split database, executing queries as WikiSQL's DBEngine does."""

    def __init__(self, path: str) -> None:
        self.path = str(path)
        self.conn = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
        self._schemas: dict[str, dict[str, str]] = {}

    def close(self) -> None:
        self.conn.close()

    def _schema(self, table: str) -> dict[str, str]:
        if table not in self._schemas:
            row = self.conn.execute("SELECT sql FROM sqlite_master WHERE tbl_name = ?", (table,)).fetchone()
            if row is None:
                raise KeyError(f"{self.path}: no table {table!r}")
            inner = re.findall(r"\((.+)\)", row[0])[0]
            self._schemas[table] = dict(part.split() for part in inner.split(", "))
        return self._schemas[table]

    def execute(self, table_id: str, sel: int, agg: int, conds: Sequence[Sequence]) -> list:
        """Result rows of ``SELECT agg(col_sel) FROM table WHERE ...``; string values lowercased."""
        table = table_id if table_id.startswith("table") else "table_" + table_id.replace("-", "_")
        schema = self._schema(table)
        select = f"col{sel}"
        if AGG_OPS[agg]:
            select = f"{AGG_OPS[agg].upper()}({select})"
        where, params = [], {}
        for col, op, val in conds:
            if isinstance(val, str):
                val = val.lower()
            if schema.get(f"col{col}") == "real" and not isinstance(val, (int, float)):
                val = _to_real(val)
            where.append(f"col{col} {SQL_COND_OPS[op]} :col{col}")
            params[f"col{col}"] = val  # as DBEngine: two conditions on one column share the last value
        sql = f"SELECT {select} AS result FROM {table}" + (" WHERE " + " AND ".join(where) if where else "")
        return [r[0] for r in self.conn.execute(sql, params)]


def logical_form_metrics(predictions: Sequence[str], golds: Sequence[Mapping],
                         db_path: str | None = None, progress: bool = False) -> dict[str, float]:
    """lfem, lf_unordered (and exec_acc with `db_path`), ×100. Each gold: {"sql", "header", "table_id"}."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    if not predictions:
        raise ValueError("no examples to score")

    db = Database(db_path) if db_path else None
    ordered = unordered = executed = 0
    try:
        for prediction, gold in tqdm(list(zip(predictions, golds)), desc="wikisql", unit="ex",
                                     disable=not progress, leave=False):
            header = gold["header"]
            lf = parse_logical_form(prediction, header)
            ordered += lf_match(lf, gold["sql"], header, ordered=True)
            unordered += lf_match(lf, gold["sql"], header, ordered=False)
            if db is not None and lf is not None:
                executed += _same_result(db, gold, lf)
    finally:
        if db is not None:
            db.close()
    n = len(predictions)
    out = {"lfem": 100.0 * ordered / n, "lf_unordered": 100.0 * unordered / n}
    if db is not None:
        out["exec_acc"] = 100.0 * executed / n
    return out


def per_example(predictions: Sequence[str], golds: Sequence[Mapping]) -> dict[str, list[int]]:
    """lfem and lf_unordered of every example (1 or 0), without the database."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    out: dict[str, list[int]] = {"lfem": [], "lf_unordered": []}
    for prediction, gold in zip(predictions, golds):
        lf = parse_logical_form(prediction, gold["header"])
        out["lfem"].append(int(lf_match(lf, gold["sql"], gold["header"], ordered=True)))
        out["lf_unordered"].append(int(lf_match(lf, gold["sql"], gold["header"], ordered=False)))
    return out


def _same_result(db: Database, gold: Mapping, lf: Mapping) -> bool:
    sql = gold["sql"]
    try:
        gold_result = db.execute(gold["table_id"], sql["sel"], sql["agg"], sql["conds"])
    except (sqlite3.Error, ValueError, KeyError):
        return False  # a gold query that cannot run (WikiSQL's evaluate.py would crash): counted wrong
    try:
        predicted = db.execute(gold["table_id"], lf["sel"], lf["agg"], lf["conds"])
    except (sqlite3.Error, ValueError, KeyError):
        return False  # WikiSQL's evaluate.py compares repr(error) with the gold result: never equal
    return predicted == gold_result
