"""Checksums for the download stage: expected digests, a mirror's SHA256SUMS, and the verification cache.

`expected_for` decides what a file must hash to (the mirror manifest's entry, else the registry's
official sha256/md5); `VerifiedState` remembers digests in ``<raw_dir>/.verified.json`` so that a
re-run of `deca download` does not re-hash large files.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Iterable

from deca.errors import DataError
from deca.io import write_text

log = logging.getLogger(__name__)

MANIFEST_NAME = "SHA256SUMS"
STATE_NAME = ".verified.json"
CHUNK = 1 << 20


@dataclass(frozen=True)
class Expected:
    """The digests a file must have, and what vouches for them (for the report)."""

    digests: dict = field(default_factory=dict)  # algorithm -> lowercase hex
    label: str = "unverified"
    hint: str = ""  # added to a mismatch error


def read_manifest(mirror: Path) -> dict[str, str] | None:
    """The mirror's SHA256SUMS as {relative path: sha256}, or None when the mirror has none."""
    path = Path(mirror) / MANIFEST_NAME
    if not path.is_file():
        return None
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            digest, sep, name = line.partition(" ")
            name = name[1:] if name[:1] in (" ", "*") else name
            if not sep or len(digest) != 64 or any(c not in "0123456789abcdefABCDEF" for c in digest) or not name:
                raise DataError(path, f"malformed line {line!r}", line=n,
                                fix="use sha256sum's format: '<64 hex digits>  <path relative to the mirror>'")
            out[str(PurePosixPath(name))] = digest.lower()
    return out


def expected_for(rel: str, sha256: str | None, md5: str | None, manifest: dict[str, str] | None) -> Expected:
    """What `rel` must hash to: the mirror manifest's entry if it has one, else the official checksums."""
    if manifest is not None and rel in manifest:
        return Expected({"sha256": manifest[rel]}, "manifest")
    digests = {k: v.lower() for k, v in (("sha256", sha256), ("md5", md5)) if v}
    label = "sha256" if sha256 else ("md5" if md5 else "unverified")
    hint = ""
    if manifest is not None and digests:
        hint = (f"the mirror's {MANIFEST_NAME} has no entry for {rel}, so the official checksum applies; "
                f"if the mirror deliberately holds another file, add '<sha256>  {rel}' to its {MANIFEST_NAME}")
    return Expected(digests, label, hint)


def _hashers(need: Iterable[str]) -> dict:
    return {algo: hashlib.new(algo) for algo in {"sha256", *need}}


def hash_file(path: Path, need: Iterable[str] = ()) -> dict[str, str]:
    """sha256 (always) and the other algorithms in `need` of the file at `path`, in one pass."""
    hashers = _hashers(need)
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            for h in hashers.values():
                h.update(chunk)
    return {algo: h.hexdigest() for algo, h in hashers.items()}


def copy_hashing(src: Path, dst: Path, need: Iterable[str] = ()) -> dict[str, str]:
    """Copy `src` to `dst`, hashing on the way (one read of the source)."""
    hashers = _hashers(need)
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while chunk := fin.read(CHUNK):
            fout.write(chunk)
            for h in hashers.values():
                h.update(chunk)
    return {algo: h.hexdigest() for algo, h in hashers.items()}


def mismatches(actual: dict[str, str], expected: Expected) -> list[str]:
    """Human-readable differences between computed and expected digests (empty when verified)."""
    return [f"{algo} expected {want}, got {actual.get(algo)}"
            for algo, want in expected.digests.items() if actual.get(algo) != want]


# ---------------------------------------------------------------- the verification cache

class VerifiedState:
    """``<raw_dir>/.verified.json``: digests of files already hashed, and archives already extracted.

    A file entry is trusted only while the file keeps the recorded size and mtime. The file is a
    cache: deleting it only costs re-hashing. Updates are merged under a lock so that concurrent
    `deca download` runs (one DVC stage per task) do not lose each other's entries.
    """

    def __init__(self, raw_dir: Path):
        self.path = Path(raw_dir) / STATE_NAME
        self.files: dict[str, dict] = {}
        self.archives: dict[str, dict] = {}
        data = self._read()
        self.files, self.archives = data["files"], data["archives"]

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            if isinstance(data, dict) and data.get("version") == 1:
                return {"files": dict(data.get("files", {})), "archives": dict(data.get("archives", {}))}
        except FileNotFoundError:
            pass
        except (ValueError, OSError) as exc:
            log.warning("%s is unreadable (%s); it is only a cache, rebuilding it", self.path, exc)
        return {"files": {}, "archives": {}}

    def digests(self, rel: str, path: Path, need: Iterable[str]) -> dict[str, str]:
        """Digests of the file at `path` (= raw_dir/rel), from the cache when size and mtime still match."""
        need = set(need)
        st = path.stat()
        entry = self.files.get(rel)
        if entry and entry.get("size") == st.st_size and entry.get("mtime_ns") == st.st_mtime_ns \
                and all(a in entry for a in need | {"sha256"}):
            return {k: v for k, v in entry.items() if k not in ("size", "mtime_ns")}
        digests = hash_file(path, need)
        self.record_file(rel, path, digests)
        return digests

    def record_file(self, rel: str, path: Path, digests: dict[str, str]) -> None:
        st = path.stat()
        self._update("files", rel, {"size": st.st_size, "mtime_ns": st.st_mtime_ns, **digests})

    def record_archive(self, rel: str, info: dict) -> None:
        self._update("archives", rel, info)

    def _update(self, kind: str, key: str, value: dict) -> None:
        getattr(self, kind)[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(STATE_NAME + ".lock"), "a") as lock:
            try:
                import fcntl  # POSIX only: where it is missing, the ImportError below

                fcntl.flock(lock, fcntl.LOCK_EX)
            except (ImportError, OSError):  # no advisory locks here: last writer wins (a cache only)
                pass
            data = self._read()
            data[kind][key] = value
            write_text(self.path, json.dumps({"version": 1, **data}, indent=1, sort_keys=True))
