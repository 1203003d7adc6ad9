"""WikiSQL: semantic parsing (natural language to SQL) cast as question answering.

Source: ``data.tar.bz2`` of salesforce/WikiSQL, which extracts to ``data/{train,dev,test}.jsonl`` (one
question per line: ``question``, ``table_id``, ``sql`` = {sel, agg, conds}) with the tables of each split
in ``data/<split>.tables.jsonl`` (``id``, ``header``, ``rows``, ...), joined by table id (the archive's
SQLite ``.db`` files serve execution accuracy, which decaNLP does not use: they are not read).
- context: ``The table has columns <h1, h2, ...> and key words <MAX, MIN, ...>-- <question>``, exactly
  as decaNLP writes it (no space before ``--``);
- question: ``What is the translation from English to SQL?``;
- answer: the logical form ``SELECT {agg} {col} FROM table[ WHERE {col} {op} {val}[ AND ...]]`` as the
  Query class of WikiSQL prints it, whitespace collapsed (an empty aggregation disappears).
The gold JSON keeps the SQL dict, the table header and the table id for logical-form exact match.
Paper Table 1: 56,355 / 8,421 / 15,878.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator, Sequence

from deca.errors import DataError
from deca.registry import Dropped, Example, Source, Task, register
from deca.tasks._lines import field, iter_json_objects

URL = "https://github.com/salesforce/WikiSQL/raw/master/data.tar.bz2"
QUESTION = "What is the translation from English to SQL?"
AGG_OPS = ("", "MAX", "MIN", "COUNT", "SUM", "AVG")
COND_OPS = ("=", ">", "<", "OP")
SYMS = ("SELECT", "WHERE", "AND", "COL", "TABLE", "CAPTION", "PAGE", "SECTION", "OP", "COND", "QUESTION",
        "AGG", "AGGOPS", "CONDOPS")
KEYWORDS = ", ".join(AGG_OPS[1:] + COND_OPS + SYMS)
FILES = {"train": "train", "validation": "dev", "test": "test"}
FIX = ("the files should come from WikiSQL's data.tar.bz2 (data/<split>.jsonl with its <split>.tables.jsonl); "
       "extract it again")


def logical_form(sql: dict, header: Sequence[str]) -> str:
    """The SQL query as WikiSQL's Query.__repr__ prints it, whitespace collapsed."""
    rep = f"SELECT {AGG_OPS[sql['agg']]} {header[sql['sel']]} FROM table"
    if sql["conds"]:
        rep += " WHERE " + " AND ".join(f"{header[col]} {COND_OPS[op]} {value}" for col, op, value in sql["conds"])
    return " ".join(rep.split())


def table_context(header: Sequence[str], question: str) -> str:
    """decaNLP's context: the table's columns, the SQL key words, then '-- ' and the question."""
    return f"The table has columns {', '.join(header)} and key words {KEYWORDS}-- {question}"


def read_headers(path: Path) -> dict[str, list[str]]:
    """table id -> header for one tables file (the rows are not kept: only the header is needed)."""
    headers: dict[str, list[str]] = {}
    for lineno, table in iter_json_objects(path, fix=FIX):
        table_id = field(table, "id", str, path, lineno, FIX)
        header = field(table, "header", list, path, lineno, FIX)
        if not all(isinstance(h, str) for h in header):
            raise DataError(path, f"table {table_id!r}: header {header!r:.80} is not a list of strings",
                            line=lineno, fix=FIX)
        headers[table_id] = header
    return headers


def _check_sql(sql: dict, header: list[str], path: Path, lineno: int) -> dict:
    sel = field(sql, "sel", int, path, lineno, FIX)
    agg = field(sql, "agg", int, path, lineno, FIX)
    conds = field(sql, "conds", list, path, lineno, FIX)
    problem = None
    if not 0 <= sel < len(header):
        problem = f"column index sel={sel} outside the table's {len(header)} columns"
    elif not 0 <= agg < len(AGG_OPS):
        problem = f"aggregation index agg={agg} outside 0..{len(AGG_OPS) - 1}"
    for cond in conds:
        if problem:
            break
        if not (isinstance(cond, list) and len(cond) == 3 and all(type(x) is int for x in cond[:2])
                and isinstance(cond[2], (str, int, float)) and not isinstance(cond[2], bool)):
            problem = f"malformed condition {cond!r:.80}: expected [column, operator, value]"
        elif not 0 <= cond[0] < len(header) or not 0 <= cond[1] < len(COND_OPS):
            problem = f"condition {cond!r:.80} names a column or operator that does not exist"
    if problem:
        raise DataError(path, problem, line=lineno, fix=FIX)
    return {"sel": sel, "agg": agg, "conds": conds}


def read(split: str, files: Sequence[Path], options) -> Iterator[Example | Dropped]:
    """One example per question line, joined to its table's header by table id."""
    questions, tables = (Path(f) for f in files)
    headers = read_headers(tables)
    for lineno, entry in iter_json_objects(questions, fix=FIX):
        question = field(entry, "question", str, questions, lineno, FIX)
        table_id = field(entry, "table_id", str, questions, lineno, FIX)
        if table_id not in headers:
            raise DataError(questions, f"table {table_id!r} is not in {tables.name}", line=lineno,
                            fix=f"{questions.name} and {tables.name} must come from the same WikiSQL release")
        header = headers[table_id]
        sql = _check_sql(field(entry, "sql", dict, questions, lineno, FIX), header, questions, lineno)
        yield Example(id=f"{questions.stem}-{lineno - 1}", context=table_context(header, question),
                      question=QUESTION, answer=logical_form(sql, header),
                      gold={"sql": sql, "header": header, "table_id": table_id})


register(Task(
    name="wikisql",
    description="WikiSQL (semantic parsing: English to SQL logical forms)",
    metric="lfem",
    sources=(Source(
        path="wikisql/data.tar.bz2", url=URL, extract_to="wikisql",
        members=tuple(f"wikisql/data/{f}{ext}" for f in FILES.values() for ext in (".jsonl", ".tables.jsonl")),
        note="the archive is also served as the GitHub release asset of salesforce/WikiSQL; extract it so that "
             "wikisql/data/<split>.jsonl and <split>.tables.jsonl exist",
    ),),
    splits={split: (f"wikisql/data/{f}.jsonl", f"wikisql/data/{f}.tables.jsonl") for split, f in FILES.items()},
    read=read,
    paper_counts={"train": 56355, "validation": 8421, "test": 15878},
))
