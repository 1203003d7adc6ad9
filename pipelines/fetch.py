"""Resumable HTTP(S) download of one file into a ``.part`` file.

`fetch_url` continues a partial download with an HTTP ``Range`` request, shows a tqdm progress bar,
applies a socket timeout and retries transient failures (timeouts, resets, truncated bodies, HTTP 5xx
and 429) with exponential back-off. Permanent failures (HTTP 4xx, connection refused, unknown host)
raise `FetchFailed` at once. Verification and renaming into place are the caller's business
(`pipelines.download`).
"""
from __future__ import annotations

import http.client
import logging
import re
import socket
import time
import urllib.error
import urllib.request
from pathlib import Path

from tqdm import tqdm

log = logging.getLogger(__name__)

CHUNK = 1 << 20
USER_AGENT = "deca-download/0.1 (+https://github.com/salesforce/decaNLP reproduction)"


class FetchFailed(Exception):
    """The URL could not be fetched; `reason` says why in a few words."""

    def __init__(self, reason: str, *, transient: bool = False):
        super().__init__(reason)
        self.reason = reason
        self.transient = transient


def _content_range_total(value: str | None) -> int | None:
    m = re.match(r"bytes\s+(?:\*|\d+-\d+)/(\d+)", value or "")
    return int(m.group(1)) if m else None


def _content_range_start(value: str | None) -> int | None:
    m = re.match(r"bytes\s+(\d+)-", value or "")
    return int(m.group(1)) if m else None


def _classify(exc: BaseException) -> FetchFailed:
    """Turn a urllib/socket error into FetchFailed, marking what is worth retrying."""
    if isinstance(exc, FetchFailed):
        return exc
    if isinstance(exc, urllib.error.HTTPError):
        return FetchFailed(f"HTTP {exc.code} {exc.reason}", transient=exc.code >= 500 or exc.code in (408, 429))
    if isinstance(exc, urllib.error.URLError):
        inner = exc.reason
        if isinstance(inner, socket.gaierror):
            return FetchFailed(f"cannot resolve the host ({inner.strerror or inner}); are you offline?")
        if isinstance(inner, ConnectionRefusedError):
            return FetchFailed("connection refused")
        if isinstance(inner, (TimeoutError, socket.timeout, ConnectionResetError)):
            return FetchFailed(f"network error: {inner}", transient=True)
        return FetchFailed(f"cannot connect: {inner}", transient=isinstance(inner, OSError))
    if isinstance(exc, ConnectionRefusedError):
        return FetchFailed("connection refused")
    if isinstance(exc, (TimeoutError, socket.timeout, ConnectionError, http.client.HTTPException)):
        return FetchFailed(f"network error: {type(exc).__name__}: {exc}", transient=True)
    if isinstance(exc, ValueError):  # e.g. an unsupported URL scheme
        return FetchFailed(str(exc))
    raise exc


def _fetch_once(url: str, part: Path, *, timeout: float, progress: bool, label: str) -> None:
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    request = urllib.request.Request(url, headers=headers)
    try:
        response = urllib.request.urlopen(request, timeout=timeout)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            total = _content_range_total(exc.headers.get("Content-Range"))
            if total == offset:
                log.info("%s: the partial download %s is already complete", label, part)
                return
            log.warning("%s: server refused to resume %s; starting over", label, part)
            part.unlink()
            raise FetchFailed("could not resume the partial download", transient=True) from None
        raise
    with response:
        status = getattr(response, "status", 200)
        if offset and status == 206 and _content_range_start(response.headers.get("Content-Range")) == offset:
            mode, start = "ab", offset
            log.info("%s: resuming at byte %d", label, offset)
        else:
            if offset:
                log.warning("%s: server ignored the Range request; downloading %s from the start", label, url)
            mode, start = "wb", 0
        length = response.headers.get("Content-Length")
        expected = int(length) if length and length.isdigit() else None
        received = 0
        with open(part, mode) as out, tqdm(
            total=(start + expected) if expected is not None else None, initial=start, unit="B",
            unit_scale=True, unit_divisor=1024, desc=label, disable=not progress, leave=False,
        ) as bar:
            while True:
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                out.write(chunk)
                received += len(chunk)
                bar.update(len(chunk))
        if expected is not None and received < expected:
            raise FetchFailed(f"connection closed after {received} of {expected} bytes", transient=True)


def fetch_url(url: str, part: str | Path, *, timeout: float = 60.0, retries: int = 3, backoff: float = 2.0,
              progress: bool = True, label: str | None = None) -> None:
    """Download `url` into `part`, continuing a partial file already there.

    On return `part` holds the complete body. Raises FetchFailed (with a short reason) when the URL is
    dead or every retry failed; what was received so far stays in `part` for the next attempt.
    """
    part = Path(part)
    part.parent.mkdir(parents=True, exist_ok=True)
    label = label or part.name
    attempt = 0
    while True:
        try:
            _fetch_once(url, part, timeout=timeout, progress=progress, label=label)
            return
        except Exception as exc:  # noqa: BLE001 - classified below, anything unknown re-raised
            failure = _classify(exc)
            if not failure.transient or attempt >= retries:
                if attempt:
                    failure = FetchFailed(f"{failure.reason} (after {attempt + 1} attempts)")
                raise failure from None
            attempt += 1
            delay = backoff * 2 ** (attempt - 1)
            log.warning("%s: %s; retry %d/%d in %.0f s", label, failure.reason, attempt, retries, delay)
            time.sleep(delay)
