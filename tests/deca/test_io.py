"""deca/io.py: atomic files and directories."""
import os

import pytest

from deca.io import replace_dir, write_json, write_text


def test_atomic_files_get_the_permissions_open_would_give(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    written = write_text(tmp_path / "sub" / "atomic.txt", "x")
    assert written.read_text() == "x"
    assert os.stat(written).st_mode & 0o777 == os.stat(plain).st_mode & 0o777
    assert sorted(p.name for p in written.parent.iterdir()) == ["atomic.txt"]  # no temp file left


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = write_json(tmp_path / "m.json", {"a": 1})
    with pytest.raises(TypeError):
        write_json(path, {"a": object()})
    assert path.read_text() == '{\n  "a": 1\n}\n' and os.listdir(tmp_path) == ["m.json"]


def test_replace_dir_swaps_whole_directories_and_keeps_the_old_one_on_failure(tmp_path):
    target = tmp_path / "predictions"
    replace_dir(target, lambda d: (d / "a.jsonl").write_text("1"))
    replace_dir(target, lambda d: (d / "b.jsonl").write_text("2"))
    assert [p.name for p in target.iterdir()] == ["b.jsonl"]

    def failing(d):
        (d / "c.jsonl").write_text("3")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        replace_dir(target, failing)
    assert [p.name for p in target.iterdir()] == ["b.jsonl"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["predictions"]
