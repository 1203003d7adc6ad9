"""Writing files and directories atomically: written under a temporary name beside the target, renamed in.

A crash, a kill or a full disk leaves either the old file or the new one, never half of one: the temp
file is fsync'ed before the rename and the directory after it (so the rename itself survives a crash).
A directory (`replace_dir`) is filled under a temporary name and swapped in for the old one with renames.
"""
from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

from deca.errors import DataError, DecaError, WriteError, exception_chain


def _read_umask() -> int:
    mask = os.umask(0o022)  # the only way to read it; set back at once (at import, before any thread)
    os.umask(mask)
    return mask


UMASK = _read_umask()
# What a write() or fsync() that names no file fails with when the output cannot be written.
WRITE_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM)


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and rename the temp file to `path`; on error nothing is left behind (nor the
    directories it created). An OSError of the write itself (disk full, read-only, no permission) comes out
    as a `WriteError` naming `path`."""
    path = Path(path)
    created = make_dirs(path.parent, path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~UMASK)  # mkstemp makes 0600; give the file the permissions open() would
        write(Path(tmp))
        _fsync(Path(tmp))
        os.replace(tmp, path)
        _fsync(path.parent)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        remove_dirs(created)
        err = as_write_error(exc, path)
        if err is exc:
            raise
        raise err from exc
    return path


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_sha256(path: str | Path) -> str:
    """sha256 of a file, read in 16 MB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            h.update(chunk)
    return h.hexdigest()


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically (`atomic_write`)."""
    return atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_json(path: str | Path, obj: Any) -> Path:
    """Write `obj` as indented JSON (UTF-8, newline-terminated) to `path` atomically."""
    return write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def swap_dir(new: str | Path, target: str | Path) -> Path:
    """Rename the complete directory `new` to `target`, replacing what was there (the old one is renamed
    away first and removed last; if the final rename fails, the old one is put back)."""
    new, target = Path(new), Path(target)
    old = target.with_name(f".{target.name}.old-{os.getpid()}") if target.exists() else None
    if old is not None:
        os.rename(target, old)
    try:
        os.rename(new, target)
    except BaseException:
        if old is not None:
            os.rename(old, target)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def replace_dir(target: str | Path, fill: Callable[[Path], None]) -> Path:
    """Call ``fill(tmp_dir)`` on a fresh directory beside `target`, then swap it in for `target` as a whole;
    on error the temporary directory is removed and `target` is left as it was (and a parent directory
    this call created is removed again). An OSError of the writing comes out as a `WriteError` naming the
    file under `target` (or `target`)."""
    target = Path(target)
    created = make_dirs(target.parent, target)
    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
        fill(tmp)
        return swap_dir(tmp, target)
    except BaseException as exc:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        remove_dirs(created)
        err = as_write_error(exc, target, tmp)
        if err is exc:
            raise
        raise err from exc


def make_dirs(directory: Path, for_path: Path | None = None) -> list[Path]:
    """``mkdir -p directory``; returns the directories it created, deepest last (for `remove_dirs`).
    A failure is a `WriteError` naming `for_path` (the output the directory is for), or the directory."""
    missing = []
    for d in (directory, *directory.parents):
        if d.exists() or d.is_symlink():
            break
        missing.append(d)
    created = []
    for d in reversed(missing):
        try:
            d.mkdir()
        except FileExistsError:  # made meanwhile by another process (or a file: the next mkdir says so)
            continue
        except OSError as exc:
            remove_dirs(created)
            raise WriteError(exc.errno, exc.strerror, for_path or d) from exc
        created.append(d)
    return created


def remove_dirs(created: list[Path]) -> None:
    """Remove the directories `make_dirs` created, deepest first, as far as they are (still) empty."""
    for d in reversed(created):
        try:
            d.rmdir()
        except OSError:  # not empty (another writer uses it), or already gone
            return


def as_write_error(exc: BaseException, path: Path, tmp_dir: Path | None = None) -> BaseException:
    """`exc` as a WriteError naming `path` when it is an OSError of writing `path`: one naming `path`, a
    temporary name beside it (``.<name>.*``) or a file under the temporary directory `tmp_dir` (then named
    as under `path`), or naming no file with an errno of writing (`WRITE_ERRNOS`: a full disk, a read-only
    one); also a WriteError that a framework wrapped (a Beam worker writing the temporary file), and such an
    OSError naming no file that a library wrapped in another error (torch.save's RuntimeError). Any other
    exception comes back as it is (an OSError about another file names that file)."""
    chain = exception_chain(exc)
    err = exc if isinstance(exc, OSError) else next((e for e in chain if isinstance(e, WriteError)), None) or next(
        (e for e in chain if isinstance(e, OSError) and e.errno in WRITE_ERRNOS and not e.filename), None)
    if err is None or (isinstance(err, DecaError) and not isinstance(err, WriteError)):
        return exc
    if err.filename:
        name = Path(err.filename)
        if tmp_dir is not None and name != tmp_dir and name.is_relative_to(tmp_dir):
            path = path / name.relative_to(tmp_dir)
        elif name != path and not (name.parent == path.parent and name.name.startswith(f".{path.name}.")):
            return exc
    elif err.errno not in WRITE_ERRNOS:
        return exc  # naming no file and not a failure to write (e.g. a network error while fetching)
    if isinstance(err, WriteError) or not err.errno:
        reason = err.strerror or str(err)
    else:
        reason = os.strerror(err.errno)
    return WriteError(err.errno, reason, path)


def check_writable(*directories: str | Path) -> None:
    """Fail before any work when an output directory cannot be created or written: each directory, or the
    nearest of its parents that exists, must be a directory where a file can be created (tried: a temporary
    file is created there and removed). Raises `WriteError` naming the directory; creates nothing."""
    for directory in map(Path, directories):
        existing = next(d for d in (directory, *directory.parents) if d.exists() or d == d.parent)
        if not existing.is_dir():
            raise WriteError(errno.ENOTDIR, f"cannot be created: {existing} is a file, not a directory", directory,
                             where=existing)
        try:
            fd, probe = tempfile.mkstemp(prefix=".deca-write-check.", dir=existing)
        except OSError as exc:
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise WriteError(exc.errno, reason if existing == directory else f"{reason} (in {existing})",
                             directory, where=existing) from exc
        os.close(fd)
        os.unlink(probe)


def json_line(line: str, where: str | Path, lineno: int, fix: str) -> Any:
    """The JSON value of one line of a JSON-lines file; a DataError naming the file, the line and `fix` when the
    line is not JSON or nests too deeply for the parser."""
    try:
        return json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataError(where, f"not valid JSON ({exc.msg})", line=lineno, fix=fix) from None
    except RecursionError:
        raise DataError(where, "JSON nested too deeply", line=lineno, fix=fix) from None
