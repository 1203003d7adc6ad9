"""Shared test fixtures: the bundled miniature corpora and the real corpora in ../shared/corpora."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURE_CORPORA = ROOT / "tests" / "fixtures" / "corpora"
SHARED_CORPORA = Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora"))

os.environ.setdefault("DVC_NO_ANALYTICS", "1")
os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ.setdefault("RAY_AUTH_MODE", "disabled")
os.environ.setdefault("RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "0")


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
