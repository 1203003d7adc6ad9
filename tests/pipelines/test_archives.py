"""Safe extraction: no archive member may land outside the target directory."""
from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest

from pipelines.archives import UnsafeArchive, extract_to_temp, is_archive, merge_into


def make_tar(path: Path, entries: list[tuple]) -> Path:
    """entries: ("file", name, bytes) | ("symlink", name, target) | ("hardlink", name, target)."""
    with tarfile.open(path, "w:gz") as tar:
        for kind, name, payload in entries:
            info = tarfile.TarInfo(name)
            if kind == "file":
                info.size = len(payload)
                tar.addfile(info, io.BytesIO(payload))
            else:
                info.type = tarfile.SYMTYPE if kind == "symlink" else tarfile.LNKTYPE
                info.linkname = payload
                tar.addfile(info)
    return path


def make_zip(path: Path, entries: list[tuple]) -> Path:
    """entries: ("file", name, bytes) | ("symlink", name, target)."""
    with zipfile.ZipFile(path, "w") as zf:
        for kind, name, payload in entries:
            info = zipfile.ZipInfo(name)
            if kind == "symlink":
                info.create_system = 3
                info.external_attr = (stat.S_IFLNK | 0o777) << 16
                zf.writestr(info, payload)
            else:
                zf.writestr(info, payload)
    return path


def leftovers(work: Path) -> list[str]:
    return sorted(p.name for p in work.iterdir()) if work.exists() else []


def test_is_archive_by_suffix():
    assert is_archive("a/b.tar.gz") and is_archive("x.ZIP") and is_archive("r.tar.bz2") and is_archive("e.tgz")
    assert not is_archive("mrqa/dev/SQuAD.jsonl.gz") and not is_archive("sst/train.csv")


def test_good_tar_extracts_with_internal_symlink(tmp_path):
    archive = make_tar(tmp_path / "good.tar.gz", [
        ("file", "d/one.txt", b"one"), ("symlink", "d/alias.txt", "one.txt"), ("hardlink", "d/hard.txt", "d/one.txt"),
    ])
    out = extract_to_temp(archive, tmp_path / "work")
    assert (out / "d" / "one.txt").read_bytes() == b"one"
    assert (out / "d" / "alias.txt").is_symlink() and (out / "d" / "alias.txt").read_bytes() == b"one"
    assert (out / "d" / "hard.txt").read_bytes() == b"one"


@pytest.mark.parametrize("entries, words", [
    ([("file", "ok.txt", b"x"), ("file", "../evil", b"pwned")], ["'../evil'", "'..'"]),
    ([("file", "ok.txt", b"x"), ("file", "/tmp/deca_evil_abs", b"pwned")], ["absolute path"]),
    ([("file", "ok.txt", b"x"), ("symlink", "link", "../../outside")], ["symlink", "outside"]),
    ([("file", "ok.txt", b"x"), ("symlink", "link", "/etc/passwd")], ["symlink", "absolute"]),
    ([("file", "ok.txt", b"x"), ("hardlink", "hard", "../outside")], ["hard link", "outside"]),
    # each link looks harmless on its own; together l2 resolves to the parent of the target directory
    ([("symlink", "l1", "."), ("symlink", "l2", "l1/.."), ("file", "ok.txt", b"x")], ["outside"]),
], ids=["dotdot", "absolute", "symlink-out", "symlink-abs", "hardlink-out", "symlink-chain"])
def test_tar_escapes_refused_and_nothing_extracted(tmp_path, entries, words):
    archive = make_tar(tmp_path / "evil.tar.gz", entries)
    work = tmp_path / "work"
    with pytest.raises(UnsafeArchive) as info:
        extract_to_temp(archive, work)
    message = str(info.value)
    assert str(archive) in message and "refusing" in message
    for word in words:
        assert word in message
    assert leftovers(work) == []  # the temporary directory is gone: nothing extracted anywhere
    assert not (tmp_path / "evil").exists() and not Path("/tmp/deca_evil_abs").exists()


def test_good_zip_extracts(tmp_path):
    archive = make_zip(tmp_path / "good.zip", [("file", "d/one.txt", b"one"), ("symlink", "d/alias", "one.txt")])
    out = extract_to_temp(archive, tmp_path / "work")
    assert (out / "d" / "one.txt").read_bytes() == b"one"
    assert (out / "d" / "alias").is_symlink() and (out / "d" / "alias").read_bytes() == b"one"


@pytest.mark.parametrize("entries, words", [
    ([("file", "ok.txt", b"x"), ("file", "../evil", b"pwned")], ["'../evil'"]),
    ([("file", "ok.txt", b"x"), ("file", "/tmp/deca_evil_abs_zip", b"pwned")], ["absolute path"]),
    ([("file", "ok.txt", b"x"), ("symlink", "link", "../../outside")], ["symlink", "outside"]),
    ([("symlink", "l1", "."), ("symlink", "l2", "l1/.."), ("file", "ok.txt", b"x")], ["outside"]),
], ids=["dotdot", "absolute", "symlink-out", "symlink-chain"])
def test_zip_escapes_refused_and_nothing_extracted(tmp_path, entries, words):
    archive = make_zip(tmp_path / "evil.zip", entries)
    work = tmp_path / "work"
    with pytest.raises(UnsafeArchive) as info:
        extract_to_temp(archive, work)
    for word in words:
        assert word in str(info.value)
    assert leftovers(work) == []
    assert not (tmp_path / "evil").exists() and not Path("/tmp/deca_evil_abs_zip").exists()


def test_corrupt_archive_leaves_nothing(tmp_path):
    archive = tmp_path / "broken.tar.gz"
    archive.write_bytes(b"not a tar at all")
    work = tmp_path / "work"
    with pytest.raises(tarfile.TarError):
        extract_to_temp(archive, work)
    assert leftovers(work) == []


def test_merge_into_moves_new_and_replaces_existing(tmp_path):
    src, dst = tmp_path / "src", tmp_path / "dst"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "new.txt").write_text("new")
    (src / "a" / "same.txt").write_text("v2")
    (dst / "a").mkdir(parents=True)
    (dst / "a" / "same.txt").write_text("v1")
    (dst / "a" / "keep.txt").write_text("keep")
    merge_into(src, dst)
    assert (dst / "a" / "b" / "new.txt").read_text() == "new"
    assert (dst / "a" / "same.txt").read_text() == "v2"
    assert (dst / "a" / "keep.txt").read_text() == "keep"
    assert not src.exists()
