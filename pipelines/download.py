"""Get each task's raw files into the raw directory, verified: from the official URLs or a local mirror.

Every `deca.registry.Source` names a path relative to the raw directory (``data/raw``); a mirror uses
the same relative paths. For each source:

* **Present already?** A plain file under ``<raw_dir>/<path>`` whose checksum matches is left alone.
  An archive counts as present when all its ``members`` exist. Checksums are cached in
  ``<raw_dir>/.verified.json`` (keyed by path, size and mtime), so a re-run hashes nothing and is a
  no-op.
* **Otherwise** it is taken, in this order, from an archive placed by hand at ``<raw_dir>/<path>``,
  from the mirror (``--mirror DIR``: the file itself, or for an archive either the archive or its
  already-extracted members), or from ``Source.url`` (resumable download into ``<path>.part``).
* **Verification.** A mirror with a ``SHA256SUMS`` file at its root (``sha256sum`` format, paths
  relative to the mirror) is checked against that manifest: it may hold non-official files such as the
  miniature corpora in ``tests/fixtures/corpora``. Files the manifest does not list, files of a mirror
  without a manifest and downloads are checked against the official sha256/md5 of the registry. Files
  without any known checksum are taken as they are and reported ``unverified``.
* **Placing.** Files appear by an atomic rename once complete and verified; archives are extracted
  safely (`pipelines.archives`) into ``Source.extract_to`` (default: the archive's directory) and
  moved into place when complete. A downloaded archive is deleted after extraction, so the raw
  directory holds the same files whether they came from a URL or a mirror.

A dead URL, a file missing from the mirror or a checksum mismatch raises one `DownloadError` naming the
task, the file, the URL and how to supply the file by hand; a bad file is removed, never put in place.
The output (the files under ``<raw_dir>/<path>``) depends only on the sources, so `dvc repro` can call
``deca download --tasks <task> --mirror <dir>`` per task and a second call does nothing.
"""
from __future__ import annotations

import logging
import os
import shutil
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable, Sequence

from deca.errors import DownloadError
from deca.io import atomic_write
from deca.registry import Source, get_task, resolve_tasks
from pipelines.archives import UnsafeArchive, extract_to_temp, is_archive, merge_into
from pipelines.checksums import (MANIFEST_NAME, STATE_NAME, Expected, VerifiedState, copy_hashing,  # noqa: F401
                                 expected_for, hash_file, mismatches, read_manifest)
from pipelines.fetch import FetchFailed, fetch_url

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What happened to one source: action is present, downloaded, copied, extracted or failed."""

    task: str
    file: str
    action: str
    verified: str  # sha256 | md5 | manifest | manifest (k/n files) | unverified | "-" (failed)
    origin: str = ""  # URL, mirror path or local archive it came from
    error: str = ""


# ---------------------------------------------------------------- helpers

def safe_rel(rel: str, what: str = "path") -> str:
    """`rel` as a normalized relative POSIX path; absolute paths and '..' are configuration errors."""
    p = PurePosixPath(rel.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts:
        raise DownloadError(f"{what} {rel!r} must be relative to the raw directory, without '..'")
    return str(p)


# ---------------------------------------------------------------- one source

@dataclass
class Context:
    """Everything `ensure_source` needs besides the source itself."""

    raw_dir: Path
    mirror: Path | None = None
    manifest: dict[str, str] | None = None
    state: VerifiedState | None = None
    timeout: float = 60.0
    retries: int = 3
    backoff: float = 2.0
    progress: bool = True
    fetch: Callable[..., None] = field(default=None)  # type: ignore[assignment]

    def __post_init__(self):
        self.raw_dir = Path(self.raw_dir)
        self.mirror = Path(self.mirror) if self.mirror is not None else None
        if self.state is None:
            self.state = VerifiedState(self.raw_dir)
        if self.fetch is None:
            self.fetch = fetch_url


def _fix(source: Source, rel: str, ctx: Context) -> str:
    """How to supply the file by hand, for error messages."""
    members = ", ".join(source.members)
    where = ctx.raw_dir / rel
    if source.url:
        text = f"download {source.url} yourself and place it at {where}"
    else:
        text = f"obtain {rel} by hand (it has no public URL) and place it at {where}"
    if members:
        text += f" (or extract it there so that {members} exist under {ctx.raw_dir})"
    text += f", or pass --mirror DIR holding {rel}" + (f" or its extracted members ({members})" if members else "")
    text += "; then re-run `deca download`"
    if source.note:
        text += f"\n  note: {source.note}"
    return text


def _fail(task: str, source: Source, rel: str, ctx: Context, problem: str) -> DownloadError:
    return DownloadError(f"task {task!r}: {problem}\n  fix: {_fix(source, rel, ctx)}")


def _mismatch(task: str, rel: str, origin: str, bad: list[str], expected: Expected, *,
              deleted: bool = False, ctx: Context | None = None) -> DownloadError:
    by = f" (per the mirror's {MANIFEST_NAME})" if expected.label == "manifest" else ""
    text = (f"task {task!r}: {rel} (from {origin}) failed verification: {'; '.join(bad)}{by}. "
            + ("The downloaded file was deleted; nothing" if deleted else "Nothing") + " was put in place.")
    if expected.hint:
        text += f"\n  hint: {expected.hint}"
    elif ctx is not None and ctx.mirror is not None and ctx.manifest is None:
        text += (f"\n  hint: the mirror {ctx.mirror} has no {MANIFEST_NAME}, so the official checksum applies; "
                 f"a mirror of non-official files (e.g. miniature fixtures) needs one: "
                 f"cd {ctx.mirror} && sha256sum <relative paths> > {MANIFEST_NAME}")
    elif deleted:
        text += ("\n  fix: run again (a broken transfer downloads afresh); if it keeps failing, the file at the URL "
                 "has changed and the task's checksum in deca/tasks/ needs review")
    return DownloadError(text)


def _fetch(task: str, source: Source, rel: str, ctx: Context) -> Path:
    """Download source.url into <raw_dir>/<rel>.part (resuming) and return that path."""
    if not source.url:
        raise _fail(task, source, rel, ctx, f"{rel} is not present and has no public URL")
    part = ctx.raw_dir / (rel + ".part")
    log.info("%s: downloading %s", rel, source.url)
    try:
        ctx.fetch(source.url, part, timeout=ctx.timeout, retries=ctx.retries, backoff=ctx.backoff,
                  progress=ctx.progress, label=rel)
    except FetchFailed as exc:
        raise _fail(task, source, rel, ctx, f"cannot download {rel} from {source.url}: {exc.reason}") from None
    return part


def _ensure_file(task: str, source: Source, rel: str, ctx: Context) -> Outcome:
    target = ctx.raw_dir / rel
    expected = expected_for(rel, source.sha256, source.md5, ctx.manifest)
    if target.is_file():
        bad = mismatches(ctx.state.digests(rel, target, expected.digests), expected)
        if not bad:
            log.info("%s: present and verified (%s); nothing to do", rel, expected.label)
            return Outcome(task, rel, "present", expected.label, str(target))
        log.warning("%s: present but %s; replacing it", rel, "; ".join(bad))
    if ctx.mirror is not None:
        src = ctx.mirror / rel
        if not src.is_file():
            raise _missing_in_mirror(task, source, rel, ctx, [src])
        digests: dict[str, str] = {}

        def copy_verified(tmp: Path) -> None:  # raising leaves nothing behind and target as it was
            digests.update(copy_hashing(src, tmp, expected.digests))
            bad = mismatches(digests, expected)
            if bad:
                raise _mismatch(task, rel, f"mirror file {src}", bad, expected, ctx=ctx)

        atomic_write(target, copy_verified)
        ctx.state.record_file(rel, target, digests)
        log.info("%s: copied from %s (%s)", rel, src, expected.label)
        return Outcome(task, rel, "copied", expected.label, str(src))
    part = _fetch(task, source, rel, ctx)
    digests = hash_file(part, expected.digests)
    bad = mismatches(digests, expected)
    if bad:
        part.unlink(missing_ok=True)
        raise _mismatch(task, rel, source.url, bad, expected, deleted=True)
    # Not atomic_write: the .part file is the resumable download itself (kept across crashes), renamed once verified.
    os.replace(part, target)
    ctx.state.record_file(rel, target, digests)
    return Outcome(task, rel, "downloaded", expected.label, source.url)


def _missing_in_mirror(task: str, source: Source, rel: str, ctx: Context, looked: list[Path]) -> DownloadError:
    problem = f"{rel} is not in the mirror {ctx.mirror} (looked for {', '.join(map(str, looked))})"
    return _fail(task, source, rel, ctx, problem)


def _members_present(members: Sequence[str], root: Path) -> bool:
    return bool(members) and all((root / m).exists() or (root / m).is_symlink() for m in members)


def _extract(task: str, rel: str, archive: Path, extract_dir: str, members: Sequence[str], ctx: Context) -> None:
    """Extract `archive` safely and move it into <raw_dir>/<extract_dir> once complete."""
    log.info("%s: extracting %s into %s", rel, archive, ctx.raw_dir / extract_dir)
    try:
        tmp = extract_to_temp(archive, ctx.raw_dir)
    except UnsafeArchive as exc:
        raise DownloadError(f"task {task!r}: {exc}. Nothing was extracted.") from None
    except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise DownloadError(f"task {task!r}: cannot extract {archive}: {type(exc).__name__}: {exc}. "
                            "Nothing was extracted; the archive may be truncated or corrupt.") from None
    base = PurePosixPath(extract_dir)
    missing = [m for m in members if not (tmp / PurePosixPath(m).relative_to(base)).exists()]
    if missing:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DownloadError(f"task {task!r}: {archive} does not contain {', '.join(missing)} "
                            f"(expected under {extract_dir or '.'}); nothing was extracted. Is it the right file?")
    merge_into(tmp, ctx.raw_dir / extract_dir)


def _copy_members(task: str, members: Sequence[str], ctx: Context) -> str:
    """Copy already-extracted members (files or directories) from the mirror; returns the verified label."""
    staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=ctx.raw_dir))
    checked = total = 0
    try:
        for member in members:
            src_root = ctx.mirror / member
            files = [src_root] if not src_root.is_dir() else sorted(p for p in src_root.rglob("*") if p.is_file())
            for src in files:
                mrel = src.relative_to(ctx.mirror).as_posix()
                dst = staging / mrel
                dst.parent.mkdir(parents=True, exist_ok=True)
                expected = expected_for(mrel, None, None, ctx.manifest)
                bad = mismatches(copy_hashing(src, dst), expected)
                if bad:
                    raise _mismatch(task, mrel, f"mirror file {src}", bad, expected, ctx=ctx)
                total += 1
                checked += expected.label == "manifest"
        merge_into(staging, ctx.raw_dir)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if checked and checked == total:
        return "manifest"
    return f"manifest ({checked}/{total} files)" if checked else "unverified"


def _ensure_archive(task: str, source: Source, rel: str, ctx: Context) -> Outcome:
    expected = expected_for(rel, source.sha256, source.md5, ctx.manifest)
    extract_dir = safe_rel(source.extract_to, "extract_to") if source.extract_to else str(PurePosixPath(rel).parent)
    extract_dir = "" if extract_dir == "." else extract_dir
    members = [safe_rel(m, "member") for m in source.members]
    outside = [m for m in members if extract_dir and not m.startswith(extract_dir + "/")]
    if outside:
        raise DownloadError(f"task {task!r}: source {rel}: members {', '.join(outside)} are not under its "
                            f"extraction directory {extract_dir}; fix the task's Source(members=..., extract_to=...)")
    record = ctx.state.archives.get(rel)
    recorded = record.get("digests", {}) if record else {}
    # extracted from an archive that the current expectation (mirror manifest / official) rejects
    stale = bool(recorded) and set(expected.digests) <= set(recorded) and bool(mismatches(recorded, expected))
    if not stale and (_members_present(members, ctx.raw_dir)
                      or (not members and record and (ctx.raw_dir / extract_dir).is_dir())):
        label = record["verified"] if record else "unverified"
        log.info("%s: members present (%s); nothing to do", rel, label)
        return Outcome(task, rel, "present", label, str(ctx.raw_dir / (extract_dir or ".")))

    def from_archive(path: Path, origin: str, action: str, downloaded: bool, digests=None) -> Outcome:
        digests = digests or hash_file(path, expected.digests)
        bad = mismatches(digests, expected)
        if bad:
            if downloaded:
                path.unlink(missing_ok=True)
            raise _mismatch(task, rel, origin, bad, expected, deleted=downloaded, ctx=None if downloaded else ctx)
        try:
            _extract(task, rel, path, extract_dir, members, ctx)
        finally:
            if downloaded:  # the raw directory keeps the extracted members, not the archive
                path.unlink(missing_ok=True)
        ctx.state.record_archive(rel, {"digests": digests, "verified": expected.label, "members": members,
                                       "origin": origin})
        return Outcome(task, rel, action, expected.label, origin)

    local = ctx.raw_dir / rel
    if local.is_file():  # placed there by hand
        digests = ctx.state.digests(rel, local, expected.digests)
        bad = mismatches(digests, expected)
        if not bad:
            return from_archive(local, f"{local} (placed by hand)", "extracted", downloaded=False, digests=digests)
        log.warning("%s: the archive at %s does not verify (%s); ignoring it", rel, local, "; ".join(bad))
    if ctx.mirror is not None:
        src = ctx.mirror / rel
        if src.is_file():
            return from_archive(src, f"mirror file {src}", "extracted", downloaded=False)
        if _members_present(members, ctx.mirror):
            label = _copy_members(task, members, ctx)
            ctx.state.record_archive(rel, {"digests": {}, "verified": label, "members": members,
                                           "origin": f"members in mirror {ctx.mirror}"})
            log.info("%s: copied its members %s from %s (%s)", rel, ", ".join(members), ctx.mirror, label)
            return Outcome(task, rel, "copied", label, str(ctx.mirror))
        raise _missing_in_mirror(task, source, rel, ctx, [src] + [ctx.mirror / m for m in members])
    part = _fetch(task, source, rel, ctx)
    return from_archive(part, source.url, "downloaded+extracted", downloaded=True)


def ensure_source(task: str, source: Source, ctx: Context) -> Outcome:
    """Make one source present and verified under ctx.raw_dir (see the module docstring)."""
    rel = safe_rel(source.path, "source path")
    ctx.raw_dir.mkdir(parents=True, exist_ok=True)
    if source.members or source.extract_to:
        if not is_archive(rel):
            raise DownloadError(f"task {task!r}: source {rel} declares members/extract_to but is not an archive "
                                "(.zip, .tar, .tgz, .tar.gz, .tar.bz2, .tar.xz)")
    try:
        if is_archive(rel):
            return _ensure_archive(task, source, rel, ctx)
        return _ensure_file(task, source, rel, ctx)
    except DownloadError:
        _prune_empty_dirs((ctx.raw_dir / rel).parent, ctx.raw_dir)
        raise


def _prune_empty_dirs(path: Path, stop: Path) -> None:
    """Remove `path` and its parents below `stop` while they are empty (left by a failed attempt)."""
    while path != stop and stop in path.parents:
        try:
            path.rmdir()
        except OSError:  # not empty, or already gone
            return
        path = path.parent


# ---------------------------------------------------------------- many tasks

def download_sources(items: Iterable[tuple[str, Source]], raw_dir: str | Path = "data/raw",
                     mirror: str | Path | None = None, *, continue_on_error: bool = False,
                     timeout: float = 60.0, retries: int = 3, backoff: float = 2.0, progress: bool = True,
                     fetch: Callable[..., None] | None = None) -> list[Outcome]:
    """Ensure each (task name, Source) in order; a path shared by several tasks is handled once.

    Raises the first DownloadError, or with `continue_on_error` records it as a ``failed`` Outcome
    (its `error` holds the message) and goes on.
    """
    raw = Path(raw_dir)
    raw.mkdir(parents=True, exist_ok=True)
    manifest = None
    if mirror is not None:
        mirror = Path(mirror)
        if not mirror.is_dir():
            raise DownloadError(f"mirror {mirror} is not a directory\n  fix: pass --mirror with a directory laid "
                                "out like ../shared/corpora (<task dir>/<official file names>)")
        manifest = read_manifest(mirror)
        log.info("mirror %s: verifying against %s", mirror,
                 f"its {MANIFEST_NAME} ({len(manifest)} entries)" if manifest is not None else "the official checksums")
    ctx = Context(raw, mirror, manifest, timeout=timeout, retries=retries, backoff=backoff, progress=progress,
                  fetch=fetch)
    outcomes: list[Outcome] = []
    done: dict[str, Outcome] = {}
    for task, source in items:
        if source.path in done:
            prev = done[source.path]
            action = "failed" if prev.action == "failed" else "present"
            outcomes.append(Outcome(task, prev.file, action, prev.verified, prev.origin, prev.error))
            continue
        try:
            outcome = ensure_source(task, source, ctx)
        except DownloadError as exc:
            if not continue_on_error:
                raise
            log.error("task %r: %s failed (the error is repeated at the end)", task, source.path)
            outcome = Outcome(task, source.path, "failed", "-", source.url or "", str(exc))
        outcomes.append(outcome)
        done[source.path] = outcome
    return outcomes


def download(tasks: Sequence[str] | str, raw_dir: str | Path = "data/raw", mirror: str | Path | None = None,
             **kwargs) -> list[Outcome]:
    """Fetch every source of the selected tasks (names, globs, ``decanlp``, ``all``); see download_sources."""
    items = [(name, source) for name in resolve_tasks(tasks) for source in get_task(name).sources]
    return download_sources(items, raw_dir, mirror, **kwargs)


def format_table(outcomes: Sequence[Outcome]) -> str:
    """The end-of-run summary: one row per source (task, file, action, verified by)."""
    header = ("task", "file", "action", "verified")
    rows = [header] + [(o.task, o.file, o.action, o.verified) for o in outcomes]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.action] = counts.get(o.action, 0) + 1
    lines.append(f"{len(outcomes)} files: " + ", ".join(f"{n} {a}" for a, n in sorted(counts.items())))
    return "\n".join(lines)
