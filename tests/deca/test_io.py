"""deca/io.py: atomic files and directories."""
import errno
import os
import pickle

import pytest

from deca.errors import WriteError
from deca.io import atomic_write, check_writable, replace_dir, write_json, write_text


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


# ----------------------------------------------------------------------------- a full disk, a read-only folder

def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")  # pyarrow's


def test_a_full_disk_names_the_file_and_leaves_no_folder_it_created(tmp_path):
    target = tmp_path / "eval" / "test" / "metrics.json"
    with pytest.raises(WriteError) as err:
        atomic_write(target, full_disk)
    assert isinstance(err.value, OSError) and err.value.errno == errno.ENOSPC  # still an OSError for callers
    assert str(err.value).splitlines() == [
        f"{target}: No space left on device",
        f"  fix: free space on the disk that holds {target.parent} (or write the output elsewhere), then run it again"]
    assert list(tmp_path.iterdir()) == []  # neither eval/test nor eval is left behind, nor a temp file


def test_a_full_disk_while_filling_a_directory_names_it_and_leaves_nothing(tmp_path):
    def fill(d):
        (d / "a.jsonl").write_text("1")
        with open(d / "b.jsonl", "w") as f:
            f.write("2")
            full_disk()

    with pytest.raises(WriteError, match=f"^{tmp_path / 'out' / 'predictions'}: No space left on device"):
        replace_dir(tmp_path / "out" / "predictions", fill)
    assert list(tmp_path.iterdir()) == []

    def fill_named(d):
        raise OSError(errno.EROFS, "Read-only file system", str(d / "sst.jsonl"))

    with pytest.raises(WriteError, match=f"^{tmp_path / 'out' / 'predictions' / 'sst.jsonl'}: Read-only file system"):
        replace_dir(tmp_path / "out" / "predictions", fill_named)  # named as it would be, not by its temp name


def test_an_error_about_another_file_is_left_as_it_is(tmp_path):
    def write(tmp):
        open(tmp_path / "missing-input.txt").read()

    with pytest.raises(FileNotFoundError) as err:
        atomic_write(tmp_path / "out" / "x.txt", write)
    assert not isinstance(err.value, WriteError) and not (tmp_path / "out").exists()


def test_write_error_survives_pickling_and_says_what_to_fix():
    err = pickle.loads(pickle.dumps(WriteError(errno.EACCES, "Permission denied", "/data/out/m.json")))
    assert isinstance(err, WriteError) and err.errno == errno.EACCES and err.filename == "/data/out/m.json"
    assert str(err) == "/data/out/m.json: Permission denied\n  fix: make /data/out writable (or write the output elsewhere)"


def test_check_writable_fails_before_any_work_and_creates_nothing(tmp_path, monkeypatch):
    check_writable(tmp_path / "new" / "deeper", tmp_path)  # creatable, writable: fine
    (tmp_path / "blocker").write_text("a file")
    with pytest.raises(WriteError, match=f"^{tmp_path / 'blocker' / 'report'}: cannot be created: "
                                         f"{tmp_path / 'blocker'} is a file, not a directory"):
        check_writable(tmp_path / "ok", tmp_path / "blocker" / "report")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system", str(tmp_path / ".deca-write-check.x"))

    monkeypatch.setattr("deca.io.tempfile.mkstemp", read_only)
    with pytest.raises(WriteError) as err:
        check_writable(tmp_path / "eval" / "plots")
    assert str(err.value).splitlines()[0] == f"{tmp_path / 'eval' / 'plots'}: Read-only file system (in {tmp_path})"
    assert f"make {tmp_path} writable" in str(err.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]


def test_a_failed_write_of_the_temporary_file_wrapped_by_a_framework_names_the_target(tmp_path, monkeypatch):
    def beam_worker_writes(tmp):  # `deca prepare --vocab`: a Beam worker writes the temporary file
        try:
            write_text(tmp, "x")
        except WriteError as exc:
            raise RuntimeError("WriteError: ... [while running 'Write']") from exc

    monkeypatch.setattr("deca.io._fsync", lambda path: full_disk())
    with pytest.raises(WriteError, match=f"^{tmp_path / 'vocab.txt'}: No space left on device"):
        atomic_write(tmp_path / "vocab.txt", beam_worker_writes)
    assert list(tmp_path.iterdir()) == []


def test_an_error_that_is_not_about_writing_is_left_as_it_is(tmp_path):
    def fetch(tmp):
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")  # names no file

    with pytest.raises(ConnectionResetError) as err:
        atomic_write(tmp_path / "raw" / "x.zip", fetch)
    assert not isinstance(err.value, WriteError) and list(tmp_path.iterdir()) == []
