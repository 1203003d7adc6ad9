"""Shared test fixtures: the bundled miniature corpora and the real corpora in ../shared/corpora.

The test session guards itself (deca/processes.py, `guard_self`): every process a test starts with the
inherited environment (servers, `deca` commands, Ray, Chromium) is ended by a watchdog once the pytest process
is gone, even when it was killed with SIGKILL. DECA_TEST_NO_SESSION_GUARD=1 turns that off (a test of the
fixtures' own guards uses it).
"""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_CORPORA = ROOT / "tests" / "fixtures" / "corpora"
SHARED_CORPORA = Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora"))

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")

# A test run started in the background by a non-interactive shell (`make test &`, nohup) inherits SIGINT
# ignored, and so would every process its tests start: the Ctrl-C tests (`deca serve`, `dvc repro` killed after
# a checkpoint) would find their commands deaf to it. Ctrl-C is restored here, before any test starts one.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# DVC binds its console log handlers to sys.stdout and sys.stderr when it is first imported. Imported here, they
# hold pytest's session-long capture; first imported inside a test (the in-process `deca repro` tests, a test with
# capsys), they would hold that test's stream, closed after it, and every later DVC message in the worker fails.
import dvc  # noqa: E402,F401


def pytest_collection_modifyitems(config, items):
    """The files marked `first` (minutes of setup) go first: pytest-xdist hands out files in this order, so the
    longest start at once and no worker is left with one of them at the end while the other waits."""
    items.sort(key=lambda item: item.get_closest_marker("first") is None)  # stable: file order kept otherwise


def pytest_configure(config):
    if os.environ.get("DECA_TEST_NO_SESSION_GUARD") != "1" and not hasattr(config, "_deca_guard"):
        from deca.processes import guard_self

        config._deca_guard = guard_self()  # never released: it acts when this process has ended


@pytest.fixture(scope="session")
def fixture_corpora() -> Path:
    """The miniature raw corpora bundled in the repository (same layout as a mirror)."""
    return FIXTURE_CORPORA


@pytest.fixture(scope="session")
def shared_corpora() -> Path:
    """The real corpora mirror; tests using it skip with a clear message where it is absent."""
    if not SHARED_CORPORA.is_dir():
        pytest.skip(f"real corpora not found at {SHARED_CORPORA} (set DECA_SHARED_CORPORA to a mirror to run this test)")
    return SHARED_CORPORA


def shared_file(rel: str) -> Path:
    """A file of the real corpora mirror, or skip the test naming what is missing."""
    path = SHARED_CORPORA / rel
    if not path.exists():
        pytest.skip(f"real corpus file {path} not present (a mirror of the official download is needed)")
    return path


from tests.mini_data import mini_data  # noqa: E402,F401  (the miniature processed data, for every test folder)

pytest_plugins = ["tests.faults.record",  # the fault bench's record from a run of the tests marked fault
                  "tests.train.elastic_record"]  # the elastic section of docs/results/scale.md
