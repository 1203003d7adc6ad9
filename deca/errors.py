"""Errors that tell the user which file (and line) is wrong and how to fix it."""
from __future__ import annotations

import difflib
import errno
import re
from pathlib import Path


class DecaError(Exception):
    """Base class of every error this project raises on purpose (the CLI prints these without a traceback)."""


class ConfigError(DecaError):
    """A bad parameter in params.yaml or on the command line."""


class DataError(DecaError):
    """A raw or processed data file that cannot be used.

    The message names the file, the line when there is one, what is wrong and how to fix it.
    """

    def __init__(self, path: str | Path, message: str, *, line: int | None = None, fix: str | None = None):
        self.path = str(path)
        self.line = line
        self.fix = fix
        where = f"{self.path}:{line}" if line is not None else self.path
        text = f"{where}: {message}"
        if fix:
            text += f"\n  fix: {fix}"
        super().__init__(text)

    def __reduce__(self):  # picklable across Beam / Ray workers
        return (_rebuild_data_error, (self.path, self.args[0], self.line, self.fix))


def _rebuild_data_error(path, text, line, fix):
    err = DataError.__new__(DataError)
    Exception.__init__(err, text)
    err.path, err.line, err.fix = path, line, fix
    return err


class DownloadError(DecaError):
    """A file that could not be fetched or verified."""


def did_you_mean(name: str, known, n: int = 1, quote: bool = True) -> str:
    """' (did you mean 'x'?)' naming the closest known names (edit distance, ignoring case), or '' when none
    is close."""
    by_folded: dict[str, list[str]] = {}
    for k in map(str, known):
        by_folded.setdefault(k.casefold(), []).append(k)
    folded = difflib.get_close_matches(str(name).casefold(), list(by_folded), n=n, cutoff=0.6)
    close = [k for f in folded for k in by_folded[f]][:n]
    return f" (did you mean {', '.join(map(repr, close) if quote else close)}?)" if close else ""


def exception_chain(exc: BaseException) -> list[BaseException]:
    """`exc` and the exceptions it was raised from (__cause__, else __context__), outermost first."""
    out, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def interrupted(exc: BaseException) -> bool:
    """Whether `exc`, or an exception it was raised from, is Ctrl-C (frameworks such as Beam re-raise it as
    another error whose message starts with 'KeyboardInterrupt')."""
    return any(isinstance(e, KeyboardInterrupt) or str(e).startswith("KeyboardInterrupt")
               for e in exception_chain(exc))


class UnknownName(DecaError, KeyError):
    """A task or metric name that is not registered, or with `pattern` a glob that matches none; says the
    closest of `known` (edit distance) and where to look.

    A KeyError too, for callers that test membership that way; the CLI reports it as one line."""

    def __init__(self, kind: str, name: str, known, where: str, *, pattern: bool = False):
        what = f"{kind} pattern {name!r} matches no {kind}" if pattern else f"unknown {kind} {name!r}"
        super().__init__(f"{what}{did_you_mean(name, known, n=3, quote=False)}; {where}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class WriteError(DecaError, OSError):
    """An output file or directory that could not be written (disk full, read-only, no permission).

    An OSError with the errno of the failure whose message names the path (the file being written, never its
    temporary name) and what to do about `where` (the directory to free or make writable; default: the path's
    parent); the CLI prints it as one line. Picklable (Beam workers)."""

    def __init__(self, errno: int | None, strerror: str | None, filename: str | Path, _winerror: None = None,
                 where: str | Path | None = None):
        OSError.__init__(self, errno, strerror or "cannot write", str(filename), None,
                         str(where if where is not None else Path(filename).parent))

    def __str__(self) -> str:
        if self.errno in (errno.ENOSPC, errno.EDQUOT):
            fix = (f"free space on the disk that holds {self.filename2} (or write the output elsewhere), "
                   "then run it again")
        elif self.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            fix = f"make {self.filename2} writable (or write the output elsewhere)"
        else:
            fix = f"check that {self.filename2} is a directory that can be written"
        return f"{self.filename}: {self.strerror}\n  fix: {fix}"


def load_refusal(exc: BaseException) -> str:
    """What `torch.load(weights_only=True)` refused, in a few words: the code a planted pickle would have
    run (``it would run code (posix.system)``), else the error's first 200 characters on one line."""
    found = re.search(r"(?:Unsupported global: GLOBAL|unsupported GLOBAL) ([\w.]+)", str(exc))
    if found:
        return f"refused: it would run code ({found.group(1)}), not only load tensors"
    return f"cannot load: {type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
