"""Writing files and directories atomically: written under a temporary name beside the target, renamed in.

A crash, a kill or a full disk leaves either the old file or the new one, never half of one: the temp
file is fsync'ed before the rename and the directory after it (so the rename itself survives a crash).
A directory (`replace_dir`) is filled under a temporary name and swapped in for the old one with renames.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable


def _read_umask() -> int:
    mask = os.umask(0o022)  # the only way to read it; set back at once (at import, before any thread)
    os.umask(mask)
    return mask


UMASK = _read_umask()


def atomic_write(path: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` and rename the temp file to `path`; on error nothing is left behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~UMASK)  # mkstemp makes 0600; give the file the permissions open() would
    try:
        write(Path(tmp))
        _fsync(Path(tmp))
        os.replace(tmp, path)
        _fsync(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
    on error the temporary directory is removed and `target` is left as it was."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        fill(tmp)
        return swap_dir(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
