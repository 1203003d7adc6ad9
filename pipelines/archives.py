"""Safe extraction of the corpora archives (.zip, .tar, .tgz/.tar.gz, .tar.bz2, .tar.xz).

No member may land outside the target directory: absolute names, names with a ``..`` component,
symlinks or hard links pointing outside, and device files are refused with an `UnsafeArchive` error
that names the archive and the member. Every member is checked before anything is written, and
extraction goes to a fresh directory that the caller moves into place only when it is complete
(`extract_to_temp`), so a refused or broken archive leaves nothing behind.
"""
from __future__ import annotations

import os
import posixpath
import shutil
import stat
import tarfile
import tempfile
import zipfile
from pathlib import Path

ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")


class UnsafeArchive(Exception):
    """An archive member that would escape the target directory (or cannot be extracted safely)."""


def is_archive(path: str | os.PathLike) -> bool:
    """Whether `path` names an archive that the download stage extracts (by its suffix)."""
    name = str(path).lower()
    return name.endswith(ARCHIVE_SUFFIXES)


def _check_name(archive: Path, name: str) -> str:
    """The member name as a safe relative POSIX path, or UnsafeArchive."""
    norm = name.replace("\\", "/")
    if norm.startswith("/") or (len(norm) > 1 and norm[1] == ":"):
        raise UnsafeArchive(f"{archive}: member {name!r} has an absolute path; refusing to extract")
    parts = [p for p in norm.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnsafeArchive(f"{archive}: member {name!r} contains '..' and could escape the target directory; "
                            "refusing to extract")
    return "/".join(parts)


def _check_link(archive: Path, name: str, target: str, *, hard: bool) -> None:
    """A link is allowed only when it points inside the extraction directory."""
    kind = "hard link" if hard else "symlink"
    if target.startswith("/") or target.replace("\\", "/").startswith("/"):
        raise UnsafeArchive(f"{archive}: {kind} {name!r} -> {target!r} points to an absolute path; refusing to extract")
    base = "" if hard else posixpath.dirname(name)  # hard link targets are relative to the archive root
    resolved = posixpath.normpath(posixpath.join(base, target.replace("\\", "/")))
    if resolved == ".." or resolved.startswith("../"):
        raise UnsafeArchive(f"{archive}: {kind} {name!r} -> {target!r} points outside the target directory; "
                            "refusing to extract")


def _inside(root: Path, path: Path) -> bool:
    root_real = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == root_real or real.startswith(root_real + os.sep)


def _extract_tar(archive: Path, dest: Path) -> None:
    with tarfile.open(archive, mode="r:*") as tar:
        members = tar.getmembers()
        for m in members:  # validate everything before writing anything
            _check_name(archive, m.name)
            if m.issym():
                _check_link(archive, m.name, m.linkname, hard=False)
            elif m.islnk():
                _check_link(archive, m.name, m.linkname, hard=True)
            elif not (m.isfile() or m.isdir()):
                raise UnsafeArchive(f"{archive}: member {m.name!r} is a device, fifo or other special file; "
                                    "refusing to extract")
        # The 'data' filter re-checks every path against the real (symlink-resolved) destination.
        tar.extractall(dest, members=members, filter="data")


def _zip_symlink_target(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> str | None:
    mode = info.external_attr >> 16
    if info.create_system == 3 and stat.S_ISLNK(mode):  # made on Unix, stored as a symlink
        return zf.read(info).decode("utf-8", "surrogateescape")
    return None


def _extract_zip(archive: Path, dest: Path) -> None:
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
        plan = []
        for info in infos:
            rel = _check_name(archive, info.filename)
            link = _zip_symlink_target(zf, info)
            if link is not None:
                _check_link(archive, rel, link, hard=False)
            plan.append((info, rel, link))
        for info, rel, link in plan:
            if not rel:
                continue
            target = dest / rel
            if not _inside(dest, target.parent if link is not None else target):
                raise UnsafeArchive(f"{archive}: member {info.filename!r} would be written through a link "
                                    "outside the target directory; refusing to extract")
            if link is not None:
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(link, target)
            elif info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)


def _check_tree(archive: Path, dest: Path) -> None:
    """After extraction: every symlink must still resolve inside `dest` (catches link chains)."""
    for dirpath, dirnames, filenames in os.walk(dest):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if path.is_symlink() and not _inside(dest, path):
                rel = path.relative_to(dest)
                raise UnsafeArchive(f"{archive}: symlink {str(rel)!r} -> {os.readlink(path)!r} resolves outside "
                                    "the target directory; refusing to extract")


def extract_to_temp(archive: str | os.PathLike, work_dir: str | os.PathLike) -> Path:
    """Extract `archive` into a new temporary directory under `work_dir` and return it.

    `work_dir` should be on the same filesystem as the final destination so that the caller can
    move the result into place with renames. On any error the temporary directory is removed and
    the error (UnsafeArchive for refused members, tarfile/zipfile errors for corrupt archives) is
    raised; nothing is left behind.
    """
    archive = Path(archive)
    Path(work_dir).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".extract-", dir=work_dir))
    try:
        if archive.name.lower().endswith(".zip"):
            _extract_zip(archive, tmp)
        else:
            _extract_tar(archive, tmp)
        _check_tree(archive, tmp)
    except tarfile.FilterError as exc:  # raised by the 'data' filter: report it like our own checks
        shutil.rmtree(tmp, ignore_errors=True)
        raise UnsafeArchive(f"{archive}: {exc}; refusing to extract") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def merge_into(src: Path, dst: Path) -> None:
    """Move the tree `src` into `dst` with renames: new entries move whole, existing files are replaced.

    A top-level entry that does not exist yet appears in one atomic rename; existing directories are
    merged entry by entry. `src` is consumed.
    """
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(os.listdir(src)):
        s, d = src / entry, dst / entry
        if s.is_dir() and not s.is_symlink() and d.is_dir() and not d.is_symlink():
            merge_into(s, d)
        else:
            if d.is_dir() and not d.is_symlink():
                shutil.rmtree(d)
            elif s.is_dir() and not s.is_symlink() and (d.is_symlink() or d.exists()):
                d.unlink()  # a directory replaces a file: rename() cannot do that in one step
            os.replace(s, d)
    shutil.rmtree(src, ignore_errors=True)
