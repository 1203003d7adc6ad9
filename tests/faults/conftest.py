"""Each fault test runs in its own temporary folder, also the working directory (a case may name a path
relative to it, as a user would)."""
from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path
