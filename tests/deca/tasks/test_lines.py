import pytest

from deca.errors import DataError
from deca.tasks._lines import field, iter_json_objects, iter_jsonl, iter_lines, load_json


def test_invalid_utf8_is_reported_on_its_own_line_far_into_a_file(tmp_path):
    path = tmp_path / "big.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(1, 20000)) + b"bad \xff byte\nlast\n")
    lines = iter_lines(path)
    for _ in range(19999):
        next(lines)
    with pytest.raises(DataError, match="not valid UTF-8") as exc:
        next(lines)
    assert (exc.value.path, exc.value.line) == (str(path), 20000)


def test_lines_keep_content_and_drop_line_endings(tmp_path):
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"a \r\n\r\n  b\n")
    assert list(iter_lines(path)) == [(1, "a "), (2, ""), (3, "  b")]


def test_jsonl_skips_blank_lines_and_names_bad_ones(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"a": 1}\n\n[2]\n{"b": \n', encoding="utf-8")
    values = iter_jsonl(path)
    assert next(values) == (1, {"a": 1}) and next(values) == (3, [2])
    with pytest.raises(DataError, match="invalid JSON") as exc:
        next(values)
    assert exc.value.line == 4
    with pytest.raises(DataError, match="expected a JSON object") as exc:
        list(iter_json_objects(path))
    assert exc.value.line == 3


def test_missing_file_and_whole_json_documents(tmp_path):
    with pytest.raises(DataError, match="file not found") as exc:
        list(iter_lines(tmp_path / "nope.txt", fix="get it"))
    assert exc.value.fix == "get it"
    with pytest.raises(DataError, match="not a regular file"):
        load_json(tmp_path)
    doc = tmp_path / "doc.json"
    doc.write_text('[\n  {"a": 1},\n  {"b": ', encoding="utf-8")
    with pytest.raises(DataError, match="invalid JSON") as exc:
        load_json(doc)
    assert exc.value.line == 3
    doc.write_bytes(b'[\n"\xc3"]')
    with pytest.raises(DataError, match="UTF-8") as exc:
        load_json(doc)
    assert exc.value.line == 2


def test_field_checks_presence_and_type(tmp_path):
    record = {"n": 3, "flag": True, "s": "x"}
    assert field(record, "n", int, "f", 7) == 3
    with pytest.raises(DataError, match="no 'm' field") as exc:
        field(record, "m", int, "f", 7)
    assert exc.value.line == 7
    with pytest.raises(DataError, match="should be int"):
        field(record, "flag", int, "f", 7)  # a bool is not an index
    with pytest.raises(DataError, match="should be str or list"):
        field(record, "n", (str, list), "f", 1)
