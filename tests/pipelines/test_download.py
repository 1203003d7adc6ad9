"""`deca download`: verified, resumable downloads from a local HTTP server; mirrors; re-runs are no-ops.

No internet: files are served by an http.server on 127.0.0.1 in a background thread. Sources are built
directly (tiny fake tasks), so these tests do not depend on the task modules; one test uses the real
SST files of ../shared/corpora through the registry.
"""
from __future__ import annotations

import hashlib
import os
import re
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

import pipelines.checksums as checksums
import pipelines.download as dl
from deca.errors import DataError, DownloadError
from deca.registry import Source
from pipelines.download import Context, download, download_sources, ensure_source, format_table
from tests.pipelines.test_archives import make_tar, make_zip

TASK = "fake"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's naming
        srv = self.server
        srv.log.append({"path": self.path, "range": self.headers.get("Range")})
        if srv.fail_first.get(self.path, 0) > 0:
            srv.fail_first[self.path] -= 1
            self.send_error(503, "try again")
            return
        body = srv.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        m = re.match(r"bytes=(\d+)-$", self.headers.get("Range") or "")
        if m and srv.ranges:
            start = int(m.group(1))
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
            body = body[start:]
        else:
            self.send_response(200)
        srv.log[-1]["status"] = 206 if m and srv.ranges else 200
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def server():
    """A local HTTP server: put bytes in .files[path]; .log records every request (path, Range, status)."""
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.files, srv.log, srv.fail_first, srv.ranges = {}, [], {}, True
    srv.url = f"http://127.0.0.1:{srv.server_address[1]}"
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def ctx_for(raw: Path, mirror: Path | None = None, **kw) -> Context:
    manifest = checksums.read_manifest(mirror) if mirror is not None else None
    kw.setdefault("retries", 0)
    return Context(raw, mirror, manifest, progress=False, backoff=0, **kw)


def refused_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/gone.txt"


# ---------------------------------------------------------------- downloads

def test_download_verified_by_sha256(tmp_path, server):
    data = b"label,sentence\n1,good\n" * 100
    server.files["/a.csv"] = data
    raw = tmp_path / "raw"
    out = ensure_source(TASK, Source("fake/a.csv", server.url + "/a.csv", sha256=sha(data)), ctx_for(raw))
    assert (out.action, out.verified) == ("downloaded", "sha256")
    assert (raw / "fake/a.csv").read_bytes() == data
    assert not (raw / "fake/a.csv.part").exists()


def test_md5_only_is_verified_by_md5(tmp_path, server):
    data = b"md5 only"
    server.files["/m.txt"] = data
    out = ensure_source(TASK, Source("fake/m.txt", server.url + "/m.txt", md5=hashlib.md5(data).hexdigest()),
                        ctx_for(tmp_path / "raw"))
    assert (out.action, out.verified) == ("downloaded", "md5")


def test_resumed_download_uses_range(tmp_path, server):
    data = os.urandom(300_000)
    server.files["/big.bin"] = data
    raw = tmp_path / "raw"
    part = raw / "fake/big.bin.part"
    part.parent.mkdir(parents=True)
    part.write_bytes(data[:150_000])
    out = ensure_source(TASK, Source("fake/big.bin", server.url + "/big.bin", sha256=sha(data)), ctx_for(raw))
    assert out.action == "downloaded"
    assert server.log == [{"path": "/big.bin", "range": "bytes=150000-", "status": 206}]
    assert (raw / "fake/big.bin").read_bytes() == data and not part.exists()


def test_resume_when_server_ignores_range_starts_over(tmp_path, server):
    data = os.urandom(10_000)
    server.files["/b.bin"], server.ranges = data, False
    raw = tmp_path / "raw"
    (raw / "fake").mkdir(parents=True)
    (raw / "fake/b.bin.part").write_bytes(b"garbage-from-another-version")
    ensure_source(TASK, Source("fake/b.bin", server.url + "/b.bin", sha256=sha(data)), ctx_for(raw))
    assert server.log[0]["status"] == 200 and (raw / "fake/b.bin").read_bytes() == data


def test_complete_part_file_is_not_downloaded_again(tmp_path, server):
    data = b"already complete"
    server.files["/c.txt"] = data
    raw = tmp_path / "raw"
    (raw / "fake").mkdir(parents=True)
    (raw / "fake/c.txt.part").write_bytes(data)
    out = ensure_source(TASK, Source("fake/c.txt", server.url + "/c.txt", sha256=sha(data)), ctx_for(raw))
    assert out.action == "downloaded" and (raw / "fake/c.txt").read_bytes() == data


def test_transient_server_error_is_retried(tmp_path, server):
    server.files["/t.txt"], server.fail_first["/t.txt"] = b"ok", 1
    out = ensure_source(TASK, Source("fake/t.txt", server.url + "/t.txt", sha256=sha(b"ok")),
                        ctx_for(tmp_path / "raw", retries=2))
    assert out.action == "downloaded" and len(server.log) == 2


def test_checksum_mismatch_leaves_nothing(tmp_path, server):
    server.files["/x.txt"] = b"tampered"
    raw = tmp_path / "raw"
    expected = sha(b"original")
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, Source("fake/x.txt", server.url + "/x.txt", sha256=expected), ctx_for(raw))
    text = str(info.value)
    assert "fake/x.txt" in text and expected in text and sha(b"tampered") in text
    assert not (raw / "fake/x.txt").exists() and not (raw / "fake/x.txt.part").exists()


def test_http_404_error_names_task_file_url_and_fix(tmp_path, server):
    raw = tmp_path / "raw"
    url = server.url + "/missing.json"
    source = Source("fake/missing.json", url, sha256="0" * 64, note="the host asks for a login; see example.org")
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, source, ctx_for(raw, retries=3))
    text = str(info.value)
    for part in ("'fake'", "fake/missing.json", url, "404", f"place it at {raw / 'fake/missing.json'}",
                 "--mirror DIR holding fake/missing.json", "the host asks for a login"):
        assert part in text
    assert len(server.log) == 1  # a 404 is permanent: no retries
    assert not (raw / "fake").exists()  # not even an empty directory is left behind


def test_connection_refused_error(tmp_path):
    url = refused_url()
    raw = tmp_path / "raw"
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, Source("fake/gone.txt", url), ctx_for(raw))
    text = str(info.value)
    for part in ("'fake'", "fake/gone.txt", url, "connection refused", "yourself and place it at", "--mirror"):
        assert part in text


def test_continue_on_error_reports_every_failure(tmp_path, server):
    server.files["/ok.txt"] = b"ok"
    items = [(TASK, Source("fake/dead1.txt", refused_url())),
             (TASK, Source("fake/ok.txt", server.url + "/ok.txt", sha256=sha(b"ok"))),
             ("other", Source("other/dead2.txt", server.url + "/nope"))]
    with pytest.raises(DownloadError):
        download_sources(items, tmp_path / "raw", progress=False, retries=0)
    outs = download_sources(items, tmp_path / "raw", progress=False, retries=0, continue_on_error=True)
    assert [o.action for o in outs] == ["failed", "downloaded", "failed"]
    assert "dead2.txt" in outs[2].error and "404" in outs[2].error
    table = format_table(outs)
    assert "other/dead2.txt" in table and "2 failed" in table and "1 downloaded" in table


# ---------------------------------------------------------------- re-runs

def test_already_present_does_no_work(tmp_path, server, monkeypatch):
    data = b"x" * 5000
    server.files["/p.txt"] = data
    raw = tmp_path / "raw"
    source = Source("fake/p.txt", server.url + "/p.txt", sha256=sha(data))
    ensure_source(TASK, source, ctx_for(raw))
    mtime = (raw / "fake/p.txt").stat().st_mtime_ns

    def forbidden(*a, **k):
        raise AssertionError("no download, copy or hashing expected on a re-run")

    monkeypatch.setattr(checksums, "hash_file", forbidden)  # the cache in .verified.json must be used
    monkeypatch.setattr(dl, "copy_hashing", forbidden)
    out = ensure_source(TASK, source, ctx_for(raw, fetch=forbidden))  # fresh Context: state read from disk
    assert (out.action, out.verified) == ("present", "sha256")
    assert (raw / "fake/p.txt").stat().st_mtime_ns == mtime and len(server.log) == 1


def test_present_but_changed_file_is_replaced(tmp_path, server):
    data = b"official content"
    server.files["/r.txt"] = data
    raw = tmp_path / "raw"
    source = Source("fake/r.txt", server.url + "/r.txt", sha256=sha(data))
    ensure_source(TASK, source, ctx_for(raw))
    (raw / "fake/r.txt").write_bytes(b"edited by hand!!")  # size changes: the cache entry is stale
    out = ensure_source(TASK, source, ctx_for(raw))
    assert out.action == "downloaded" and (raw / "fake/r.txt").read_bytes() == data


# ---------------------------------------------------------------- mirrors

def write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_mirror_copy_verified_against_official_checksum(tmp_path, monkeypatch):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "fake/f.txt", b"official")
    source = Source("fake/f.txt", "http://example.invalid/f.txt", sha256=sha(b"official"))
    out = ensure_source(TASK, source, ctx_for(mirror=mirror, raw=raw))
    assert (out.action, out.verified) == ("copied", "sha256")
    assert (raw / "fake/f.txt").read_bytes() == b"official"
    monkeypatch.setattr(dl, "copy_hashing", lambda *a, **k: pytest.fail("copied again"))
    assert ensure_source(TASK, source, ctx_for(mirror=mirror, raw=raw)).action == "present"


def test_mirror_without_checksum_is_unverified(tmp_path):
    mirror = tmp_path / "mirror"
    write(mirror / "fake/u.txt", b"anything")
    out = ensure_source(TASK, Source("fake/u.txt", None), ctx_for(tmp_path / "raw", mirror))
    assert (out.action, out.verified) == ("copied", "unverified")


def test_mirror_with_manifest(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "fake/f.txt", b"miniature fixture")
    write(mirror / "fake/g.txt", b"another fixture")
    (mirror / "SHA256SUMS").write_text(f"{sha(b'miniature fixture')}  fake/f.txt\n{'0' * 64} *fake/g.txt\n")
    official = sha(b"the real, much larger file")
    out = ensure_source(TASK, Source("fake/f.txt", "http://x.invalid/f", sha256=official), ctx_for(raw, mirror))
    assert (out.action, out.verified) == ("copied", "manifest")
    # the re-run checks the present file against the manifest too, not the official checksum
    assert ensure_source(TASK, Source("fake/f.txt", None, sha256=official), ctx_for(raw, mirror)).action == "present"
    with pytest.raises(DownloadError) as info:  # a wrong manifest entry
        ensure_source(TASK, Source("fake/g.txt", None), ctx_for(raw, mirror))
    assert "SHA256SUMS" in str(info.value) and str(mirror / "fake/g.txt") in str(info.value)
    assert not (raw / "fake/g.txt").exists()


def test_manifest_without_entry_falls_back_to_official_checksum(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "fake/h.txt", b"fixture not listed")
    (mirror / "SHA256SUMS").write_text("")
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, Source("fake/h.txt", None, sha256=sha(b"official")), ctx_for(raw, mirror))
    assert "no entry for fake/h.txt" in str(info.value)
    assert not (raw / "fake/h.txt").exists() and not list(raw.rglob("*.tmp"))


def test_malformed_manifest_names_file_and_line(tmp_path):
    (tmp_path / "SHA256SUMS").write_text(f"{sha(b'a')}  ok.txt\nnot-a-digest  x.txt\n")
    with pytest.raises(DataError) as info:
        checksums.read_manifest(tmp_path)
    assert f"{tmp_path / 'SHA256SUMS'}:2" in str(info.value)


def test_missing_mirror_file_error(tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    url = "https://example.org/data/f.txt"
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, Source("fake/f.txt", url), ctx_for(tmp_path / "raw", mirror))
    text = str(info.value)
    for part in ("'fake'", "not in the mirror", str(mirror / "fake/f.txt"), url, "place it at"):
        assert part in text


# ---------------------------------------------------------------- archives

ARCHIVE_FILES = [("file", "d/one.txt", b"one"), ("file", "d/sub/two.txt", b"two")]


def archive_source(url, sha256=None, **kw) -> Source:
    return Source("arch/data.tar.gz", url, sha256=sha256, members=("arch/d/one.txt", "arch/d/sub"), **kw)


def test_archive_download_extracts_and_drops_archive(tmp_path, server):
    blob = make_tar(tmp_path / "data.tar.gz", ARCHIVE_FILES).read_bytes()
    server.files["/data.tar.gz"] = blob
    raw = tmp_path / "raw"
    source = archive_source(server.url + "/data.tar.gz", sha(blob))
    out = ensure_source(TASK, source, ctx_for(raw))
    assert (out.action, out.verified) == ("downloaded+extracted", "sha256")
    assert (raw / "arch/d/one.txt").read_bytes() == b"one" and (raw / "arch/d/sub/two.txt").read_bytes() == b"two"
    assert sorted(p.name for p in (raw / "arch").iterdir()) == ["d"]  # no archive, no .part, no temp dir
    again = ensure_source(TASK, source, ctx_for(raw, fetch=lambda *a, **k: pytest.fail("fetched again")))
    assert (again.action, again.verified) == ("present", "sha256")


def test_archive_in_mirror_is_extracted(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    blob = make_zip(write(mirror / "arch/data.zip", b"") , ARCHIVE_FILES).read_bytes()
    source = Source("arch/data.zip", None, sha256=sha(blob), members=("arch/d/one.txt",), extract_to="arch")
    out = ensure_source(TASK, source, ctx_for(raw, mirror))
    assert (out.action, out.verified) == ("extracted", "sha256")
    assert (raw / "arch/d/sub/two.txt").read_bytes() == b"two" and not (raw / "arch/data.zip").exists()


def test_mirror_with_members_only(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "arch/d/one.txt", b"one")
    write(mirror / "arch/d/sub/two.txt", b"two")
    source = archive_source("http://example.invalid/data.tar.gz", sha("whatever".encode()))
    out = ensure_source(TASK, source, ctx_for(raw, mirror))
    assert (out.action, out.verified) == ("copied", "unverified")  # official checksum is of the archive
    assert (raw / "arch/d/sub/two.txt").read_bytes() == b"two"
    assert [p.name for p in raw.iterdir() if p.name.startswith(".copy")] == []
    assert ensure_source(TASK, source, ctx_for(raw, mirror)).action == "present"


def test_mirror_members_verified_by_manifest(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "arch/d/one.txt", b"one")
    write(mirror / "arch/d/sub/two.txt", b"two")
    (mirror / "SHA256SUMS").write_text(f"{sha(b'one')}  arch/d/one.txt\n{sha(b'two')}  arch/d/sub/two.txt\n")
    out = ensure_source(TASK, archive_source(None), ctx_for(raw, mirror))
    assert (out.action, out.verified) == ("copied", "manifest")


def test_unsafe_archive_in_mirror_refused_nothing_extracted(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    (mirror / "arch").mkdir(parents=True)
    make_tar(mirror / "arch/data.tar.gz", ARCHIVE_FILES + [("file", "../evil", b"pwned")])
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, archive_source(None), ctx_for(raw, mirror))
    assert "'fake'" in str(info.value) and "../evil" in str(info.value) and "Nothing was extracted" in str(info.value)
    assert not (raw / "arch").exists() and not (raw / "evil").exists()
    assert not [p for p in raw.iterdir() if p.name.startswith(".extract")]


def test_archive_missing_declared_member(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    (mirror / "arch").mkdir(parents=True)
    make_tar(mirror / "arch/data.tar.gz", [("file", "d/one.txt", b"one")])
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, archive_source(None), ctx_for(raw, mirror))
    assert "does not contain arch/d/sub" in str(info.value)
    assert not (raw / "arch").exists()


def test_archive_placed_by_hand_is_extracted_and_kept(tmp_path):
    raw = tmp_path / "raw"
    (raw / "arch").mkdir(parents=True)
    blob = make_tar(raw / "arch/data.tar.gz", ARCHIVE_FILES).read_bytes()
    out = ensure_source(TASK, archive_source("http://example.invalid/x", sha(blob)), ctx_for(raw))
    assert out.action == "extracted" and (raw / "arch/d/one.txt").exists() and (raw / "arch/data.tar.gz").exists()


def test_bad_source_paths_are_refused(tmp_path):
    with pytest.raises(DownloadError, match="without '..'"):
        ensure_source(TASK, Source("../outside.txt", None), ctx_for(tmp_path / "raw"))
    with pytest.raises(DownloadError, match="not an archive"):
        ensure_source(TASK, Source("fake/plain.txt", None, members=("fake/x",)), ctx_for(tmp_path / "raw"))
    with pytest.raises(DownloadError, match="not under its extraction directory"):
        ensure_source(TASK, Source("a/x.zip", None, members=("b/y",), extract_to="a"), ctx_for(tmp_path / "raw"))


# ---------------------------------------------------------------- the real SST files and the CLI

@pytest.mark.corpora
def test_real_sst_from_shared_mirror(tmp_path, shared_corpora, monkeypatch):
    raw = tmp_path / "raw"
    outs = download(["sst"], raw, shared_corpora, progress=False)
    assert [(o.action, o.verified) for o in outs] == [("copied", "sha256")] * 3
    assert (raw / "sst/dev_binary_sent.csv").read_bytes() == (shared_corpora / "sst/dev_binary_sent.csv").read_bytes()
    monkeypatch.setattr(checksums, "hash_file", lambda *a, **k: pytest.fail("re-hashed"))
    assert [o.action for o in download("sst", raw, shared_corpora, progress=False)] == ["present"] * 3


@pytest.mark.corpora
def test_cli_summary_and_error(tmp_path, shared_corpora, capsys):
    from deca.cli import main

    raw = tmp_path / "raw"
    assert main(["download", "--tasks", "sst", "--mirror", str(shared_corpora), "--raw-dir", str(raw),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"sst\s+sst/train_binary_sent.csv\s+copied\s+sha256", out) and "3 files: 3 copied" in out
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["download", "--tasks", "sst", "--mirror", str(empty), "--raw-dir", str(tmp_path / "raw2"),
                 "--no-progress"]) == 1
    assert "is not in the mirror" in capsys.readouterr().err


def test_mirror_mismatch_without_manifest_suggests_one(tmp_path):
    mirror, raw = tmp_path / "mirror", tmp_path / "raw"
    write(mirror / "fake/f.txt", b"a miniature fixture")
    with pytest.raises(DownloadError) as info:
        ensure_source(TASK, Source("fake/f.txt", None, sha256=sha(b"official")), ctx_for(raw, mirror))
    assert f"the mirror {mirror} has no SHA256SUMS" in str(info.value)
    assert not (raw / "fake").exists()


def test_cli_reads_the_mirror_from_params(tmp_path, fixture_corpora, capsys):
    """`deca download` used to ignore data.mirror and try the internet."""
    from deca.cli import main

    params = tmp_path / "params.yaml"
    params.write_text(f"data:\n  mirror: {fixture_corpora}\n  raw_dir: {tmp_path / 'raw'}\n", encoding="utf-8")
    assert main(["download", "--tasks", "sst", "--params", str(params), "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert f"copying from the mirror {fixture_corpora}" in captured.err and "copied" in captured.out
    assert (tmp_path / "raw" / "sst" / "dev_binary_sent.csv").read_bytes() == \
        (fixture_corpora / "sst" / "dev_binary_sent.csv").read_bytes()
