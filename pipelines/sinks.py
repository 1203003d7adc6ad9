"""Atomic output of the Beam jobs: staging directories, Parquet shards and files swapped into place.

A run of `deca prepare` writes everything under ``<out>/.staging-<run id>/<task>/...``. Only after the
pipeline has finished without error does each finished task directory replace ``<out>/<task>``
(`deca.io.swap_dir`: rename the old one away, rename the new one in, delete the old one), so a failed
or interrupted run never leaves partial shards where a later stage reads. Single files (the vocabulary)
are written to a temporary name in the same directory and renamed (`deca.io.atomic_write`).

The output directory must be a filesystem that the driver and the workers share (local disk for the
in-process runners; NFS or similar for a distributed runner).

A write that fails (disk full, read-only) is a `deca.errors.WriteError` naming the file; Beam logs a
traceback for it before re-raising (only with `deca -v` here), and `write_error_of` finds it again in what
the runner raised, named under ``<out>`` instead of the staging directory (which is removed).
"""
from __future__ import annotations

import errno
import logging
import os
import re
import shutil
import socket
import uuid
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from deca.errors import WriteError, exception_chain
from deca.io import atomic_write, make_dirs, remove_dirs, swap_dir, write_text  # noqa: F401  (write_text: sinks.write_text)
from deca.registry import SPLITS
from deca.schema import DROPPED_SCHEMA

LOG = logging.getLogger(__name__)

STAGING_PREFIX = ".staging-"
OLD_PREFIX = ".old-"  # replaced task directories of older versions
SWAPPED_OLD = re.compile(r"\..+\.old-(\d+)")  # a replaced task directory: see deca.io.swap_dir
WRITE_ERROR = "WriteError: "  # how Beam names a WriteError in the text of the error it re-raises


class _NoWriteErrorTraceback(logging.Filter):
    """Beam logs the whole traceback of an exception raised in a DoFn before re-raising it; for a failed
    write the CLI prints one line naming the file instead (the traceback stays available with `deca -v`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return WRITE_ERROR not in record.getMessage() or logging.getLogger().level <= logging.DEBUG


logging.getLogger("apache_beam.runners.common").addFilter(_NoWriteErrorTraceback())


def write_error_of(exc: BaseException, staging_root: str | Path, out: str | Path) -> WriteError | None:
    """The WriteError behind an exception a Beam runner raised (in its chain, or only in its text when a
    worker process sent it as text), with a path under the staging directory named under `out`; None if
    there is none."""
    err = next((e for e in exception_chain(exc) if isinstance(e, WriteError)), None)
    if err is not None:
        path, code, reason = Path(err.filename), err.errno, err.strerror
    else:
        text = str(exc)
        start = text.find(WRITE_ERROR)
        if start < 0:
            return None
        first = text[start + len(WRITE_ERROR):].split("\n", 1)[0].split(" [while running", 1)[0]
        where, _, reason = first.rpartition(": ")
        path, code = Path(where), {os.strerror(c): c for c in errno.errorcode}.get(reason)
    staging_root = Path(staging_root)
    if not path.is_relative_to(staging_root):
        return WriteError(code, reason, path)
    return WriteError(code, reason, Path(out) / path.relative_to(staging_root), where=out)


def new_run_id() -> str:
    """``<host>-<pid>-<random>``: unique, and tells which process on which host owns a staging dir."""
    host = "".join(ch if ch.isalnum() else "_" for ch in socket.gethostname())[:40] or "host"
    return f"{host}-{os.getpid()}-{uuid.uuid4().hex[:8]}"


def shard_name(shard: int) -> str:
    """File name of one Parquet shard of a split."""
    return f"part-{shard:05d}.parquet"


def write_table(table: pa.Table, path: str | Path) -> Path:
    """Write a Parquet file atomically (temporary name in the same directory, then rename)."""
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def write_rows(rows: list[dict], schema: pa.Schema, path: str | Path) -> Path:
    """Write dict rows with an explicit schema (an empty list gives a valid file with that schema)."""
    return write_table(pa.Table.from_pylist(rows, schema=schema), path)


def to_batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """Dict rows as one Arrow record batch (far smaller than the Python dicts it replaces)."""
    return pa.RecordBatch.from_pylist(rows, schema=schema)


def write_batches(batches: list[pa.RecordBatch], schema: pa.Schema, path: str | Path) -> Path:
    """Write record batches as one Parquet file, byte for byte what `write_rows` writes for the same
    rows however they were batched (the columns are made contiguous first)."""
    return write_table(pa.Table.from_batches(batches, schema=schema).combine_chunks(), path)


def _pid_is_dead(pid: int) -> bool:
    """Whether no process `pid` runs on this host (a process of another user counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _owner_is_dead(name: str, prefix: str) -> bool:
    """Whether the run that created ``<prefix><host>-<pid>-...`` is a process on this host that has exited."""
    parts = name[len(prefix):].split("-")
    host = "".join(ch if ch.isalnum() else "_" for ch in socket.gethostname())[:40]
    if len(parts) < 3 or parts[0] != host or not parts[1].isdigit():
        return False
    return _pid_is_dead(int(parts[1]))


def _is_dead_leftover(name: str) -> bool:
    """Whether `name` in the output directory is a staging or replaced directory of a run that has exited:
    ``.staging-<run id>``, ``.<task>.old-<pid>`` (what `deca.io.swap_dir` renames away; the name has no
    host, so the pid is checked on this one) or ``.old-<run id>-<task>`` (left by older versions)."""
    for prefix in (STAGING_PREFIX, OLD_PREFIX):
        if name.startswith(prefix):
            return _owner_is_dead(name, prefix)
    swapped = SWAPPED_OLD.fullmatch(name)
    return swapped is not None and _pid_is_dead(int(swapped.group(1)))


def remove_stale(out: Path) -> list[Path]:
    """Delete staging/old directories left by killed runs of this host (live runs are left alone)."""
    removed = []
    if not out.is_dir():
        return removed
    for child in out.iterdir():
        if child.is_dir() and _is_dead_leftover(child.name):
            shutil.rmtree(child, ignore_errors=True)
            removed.append(child)
    if removed:
        LOG.info("removed %d leftover director%s of killed runs in %s", len(removed),
                 "y" if len(removed) == 1 else "ies", out)
    return removed


def remove_temporaries(root: str | Path) -> list[Path]:
    """Delete the temporary files of `deca.io.atomic_write` (``.<name>.<random>.tmp``) under `root`: a worker
    killed while it wrote leaves one, and the task that was writing ran again elsewhere (a distributed
    runner retries it), so the finished file is there beside it."""
    removed = []
    for path in sorted(Path(root).rglob(".*.tmp")):
        if path.is_file():
            path.unlink(missing_ok=True)
            removed.append(path)
    if removed:
        LOG.info("removed %d temporary file(s) of interrupted writes under %s", len(removed), root)
    return removed


class Staging:
    """The staging directory of one run: create, fill (the pipeline writes there), then commit or abort.

    Used as a context manager, an exception (or KeyboardInterrupt) inside the block removes the
    staging directory and leaves ``<out>`` as it was: an ``<out>`` (and parents) that this run created is
    removed again, so a failed first run (a full disk, bad data) leaves no empty folder behind.
    """

    def __init__(self, out: str | Path, run_id: str | None = None):
        self.out = Path(out).resolve()
        self.run_id = run_id or new_run_id()
        self.root = self.out / f"{STAGING_PREFIX}{self.run_id}"

    def __enter__(self) -> "Staging":
        self.created = make_dirs(self.out)
        remove_stale(self.out)
        self.root.mkdir()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.abort()  # after a commit the directory is empty; after an error it holds partial output
        if exc_type is not None:
            remove_dirs(self.created)  # only the folders this run made, and only while they are empty

    def task_dir(self, task: str) -> Path:
        return self.root / task

    def abort(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def carry_over(self, task: str, fresh_splits: Iterable[str]) -> list[str]:
        """Copy (hard-link where possible) the splits of the current ``<out>/<task>`` that this run did
        not redo into the staged task directory, so that the swap replaces only what was rebuilt.
        Returns the carried split names."""
        current = self.out / task
        staged = self.task_dir(task)
        fresh = set(fresh_splits)
        carried = []
        if not current.is_dir():
            return carried
        for split_dir in sorted(p for p in current.iterdir() if p.is_dir()):
            if split_dir.name in fresh or (staged / split_dir.name).exists():
                continue
            target = staged / split_dir.name
            target.mkdir(parents=True)
            for file in sorted(split_dir.iterdir()):
                try:
                    os.link(file, target / file.name)
                except OSError:
                    shutil.copy2(file, target / file.name)
            carried.append(split_dir.name)
        old_dropped = current / "dropped.parquet"
        new_dropped = staged / "dropped.parquet"
        if carried and old_dropped.exists() and new_dropped.exists():
            old_rows = pq.read_table(old_dropped).to_pylist()
            new_rows = pq.read_table(new_dropped).to_pylist()
            order = {s: i for i, s in enumerate(SPLITS)}
            # Split by split in the usual order, each in the order it was written (reader order).
            rows = [r for r in old_rows if r["split"] in carried] + [r for r in new_rows if r["split"] not in carried]
            rows.sort(key=lambda r: order.get(r["split"], len(order)))  # stable: keeps reader order
            write_rows(rows, DROPPED_SCHEMA, new_dropped)
        return carried

    def commit(self, task: str) -> Path:
        """Swap the staged ``<task>`` directory into ``<out>/<task>``; returns the final path."""
        return swap_dir(self.task_dir(task), self.out / task)
