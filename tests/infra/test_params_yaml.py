"""params.yaml updated in place (infra/params_yaml.py); what overlays write is checked in test_overlay.py."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infra import params_yaml
from tests.conftest import ROOT


def test_a_failed_write_leaves_params_yaml_whole(tmp_path, monkeypatch):
    """params.yaml is written with deca.io (temp file, fsync, rename): a failure leaves it as it was, no temp file."""
    import deca.io

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    before = (tmp_path / "params.yaml").read_bytes()

    def full_disk(path):
        Path(path).write_text("partial", encoding="utf-8")
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(deca.io, "_fsync", full_disk)
    with pytest.raises(OSError):
        params_yaml.write(tmp_path / "params.yaml", {"train": {"iterations": 7}})
    assert (tmp_path / "params.yaml").read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["params.yaml"]
