"""`deca serve --model models:/NAME@ALIAS --follow [SECONDS]`: the server follows its alias in the registry.

A background thread asks the registry every SECONDS which version the alias points at. When it points at
another version than the one served, that version is downloaded and loaded fully, beside the model serving
(which keeps answering meanwhile), then handed to the event loop, which swaps it in between calls
(app.LocalBackend.swap): every call is answered wholly by the model current when it arrived, and the
response's X-Model header names that version. A version that fails to download or load is not swapped in:
the old model keeps serving, one line on stderr names the version and the error, and that version is not
tried again until the alias moves elsewhere. A registry that cannot be reached gets one line per streak of
failures; the model keeps serving.

Push and poll: with `--webhook URL`, the tracking server also pushes each alias move to this process
(infer/serve/webhook.py), which `wake`s the thread at once instead of at the next poll; the load and the swap are
the same. Webhooks need an `mlflow server` with a SQL store that can reach URL; polling works with every store, a
local sqlite file included, and catches a delivery lost, at the cost of up to SECONDS of delay.
"""
from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from typing import Callable

from deca.errors import ConfigError
from infer.model_uri import alias_version, parse_model_uri, registered_checkpoint

DEFAULT_INTERVAL_S = 30.0  # `--follow` without a value: a registry query every 30 s is cheap for any store


def check_follow(model: str | None, interval_s: float | None, ray: bool) -> None:
    """ConfigError unless `--follow interval_s` can be honoured: an alias URI, a positive interval, no --ray."""
    if interval_s is None:
        return
    if not model or parse_model_uri(model)["alias"] is None:
        raise ConfigError("--follow needs --model models:/NAME@ALIAS (a version number or a run never moves), "
                          "e.g. --model models:/decanlp@champion --follow")
    if not interval_s > 0 or interval_s == float("inf"):
        raise ConfigError(f"--follow takes a positive number of seconds, got {interval_s:g} (e.g. --follow "
                          f"{DEFAULT_INTERVAL_S:g})")
    if ray:
        raise ConfigError("--follow is not supported with --ray yet; serve without --ray to follow an alias")


def log(line: str) -> None:
    print(f"deca serve: {line}", file=sys.stderr, flush=True)


class AliasFollower:
    """Polls alias `alias` of registered model `name` in `store` every `interval_s` seconds, and at once when
    woken (`wake`, a webhook delivery); a new version is loaded by `load` (checkpoint path -> model) and handed to
    `swap` (model, version)."""

    def __init__(self, name: str, alias: str, store: str, version: str, load: Callable[[Path], object],
                 swap: Callable[[object, str], None], interval_s: float = DEFAULT_INTERVAL_S,
                 say: Callable[[str], None] = log):
        self.name, self.alias, self.store, self.version = name, alias, store, version
        self.load, self.swap, self.interval, self.say = load, swap, interval_s, say
        self.failed: str | None = None  # the version that failed to load, not tried again until the alias moves
        self.unreachable: str | None = None  # the last registry error, said once per streak
        self._stop = threading.Event()
        self._wake = threading.Event()  # set by a webhook delivery (or `stop`): check now, not at the next poll
        self._thread: threading.Thread | None = None

    @property
    def uri(self) -> str:
        return f"models:/{self.name}@{self.alias}"

    def check(self) -> str | None:
        """One poll: the version swapped in, or None (no move, a failed load, an unreachable registry)."""
        try:
            version = alias_version(self.name, self.alias, self.store)
        except Exception as exc:  # noqa: BLE001 - a registry down or the alias deleted: keep serving, say so once
            if str(exc) != self.unreachable:
                self.unreachable = str(exc)
                self.say(f"{self.uri}: cannot read the alias ({one_line(exc)}); still serving version {self.version}")
            return None
        self.unreachable = None
        if version in (self.version, self.failed):
            self.failed = self.failed if version == self.failed else None
            return None
        try:
            path, _ = registered_checkpoint(f"models:/{self.name}/{version}", self.store)
            model = self.load(path)
        except Exception as exc:  # noqa: BLE001 - whatever breaks the new version, the old one keeps serving
            self.failed = version
            self.say(f"{self.uri} moved to version {version}, which failed to load ({one_line(exc)}); "
                     f"still serving version {self.version}")
            return None
        try:
            self.swap(model, version)
        except RuntimeError:  # the event loop closed while the version loaded: the server is shutting down
            return None
        self.say(f"{self.uri} moved to version {version}: now serving it (was version {self.version})")
        self.version, self.failed = version, None
        return version

    def start(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Poll in a daemon thread until `stop`; with `loop`, `swap` runs on that event loop (between calls)."""
        if loop is not None:
            swap = self.swap
            self.swap = lambda model, version: loop.call_soon_threadsafe(swap, model, version)
        self._thread = threading.Thread(target=self._run, name="deca-follow", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.interval)
            if self._stop.is_set():
                return
            self._wake.clear()  # a wake during the check below is kept: one more check after it
            self.check()

    def wake(self) -> None:
        """Check the alias now (a webhook said it moved); thread-safe, and cheap when it did not move."""
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=5)  # a load under way is abandoned with the daemon thread


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
