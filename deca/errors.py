"""Errors that tell the user which file (and line) is wrong and how to fix it."""
from __future__ import annotations

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


class UnknownName(DecaError, KeyError):
    """A task or metric name that is not registered; says the closest names (edit distance) and where to look.

    A KeyError too, for callers that test membership that way; the CLI reports it as one line."""

    def __init__(self, kind: str, name: str, known, where: str):
        import difflib

        close = difflib.get_close_matches(name, list(known), n=3, cutoff=0.6)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        super().__init__(f"unknown {kind} {name!r}{hint}; {where}")

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])
