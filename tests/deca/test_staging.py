"""deca.staging: outputs renamed into place together, or none of them."""
from __future__ import annotations

import errno

import pytest

from deca.errors import WriteError
from deca.io import write_text
from deca.staging import Staging


def test_everything_is_renamed_into_place_at_the_end(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "other.txt").write_text("kept")
    (tmp_path / "preds").mkdir()
    (tmp_path / "preds" / "stale.jsonl").write_text("old")
    with Staging() as stage:
        write_text(stage.file(tmp_path / "new" / "metrics.json"), "{}")
        write_text(stage.directory(tmp_path / "preds") / "a.jsonl", "a")
        chart = write_text(stage.directory(tmp_path / "report", whole=False) / "report.md", "r")
        assert stage.final(chart) == tmp_path / "report" / "report.md"
        assert not (tmp_path / "new").exists() or not (tmp_path / "new" / "metrics.json").exists()
    assert (tmp_path / "new" / "metrics.json").read_text() == "{}"
    assert sorted(p.name for p in (tmp_path / "preds").iterdir()) == ["a.jsonl"]  # replaced as a whole
    assert sorted(p.name for p in (tmp_path / "report").iterdir()) == ["other.txt", "report.md"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "preds", "report"]


def test_a_failure_leaves_nothing_and_names_the_target(tmp_path):
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "report.md").write_text("old")

    with pytest.raises(WriteError, match=f"^{tmp_path / 'report' / 'headline.png'}: No space left on device\n  fix: "):
        with Staging() as stage:
            write_text(stage.file(tmp_path / "new" / "deeper" / "metrics.json"), "{}")
            staged = stage.directory(tmp_path / "report", whole=False)
            write_text(staged / "report.md", "new")
            raise OSError(errno.ENOSPC, "No space left on device", str(staged / "headline.png"))
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["report", "report.md"]
    assert (tmp_path / "report" / "report.md").read_text() == "old"
