"""experiments/results: every generated page and README.md's results index equal what their records give,
and every page of docs/results is either generated or listed as pending."""
from __future__ import annotations

import pytest

from experiments.results import pages, readme
from experiments.results.__main__ import main


@pytest.mark.parametrize("page", [*pages.GENERATED, readme.README])
def test_committed_page_is_what_its_records_give(page):
    committed = (pages.records.ROOT / page).read_text(encoding="utf-8")
    assert committed == pages.render(page), f"{page} differs from its records: run `make results` and commit it"


def test_every_results_page_is_generated_or_pending_and_indexed():
    assert pages.unlisted() == []
    assert not set(pages.GENERATED) & set(pages.PENDING)


def test_check_passes_on_the_committed_pages(capsys):
    assert main(["--check"]) == 0


def test_a_page_edited_by_hand_differs_and_is_rewritten(tmp_path, monkeypatch):
    name = "docs/results/table2.md"
    expected = pages.render(name)
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / name).write_text(expected.replace("inconclusive", "reproduced", 1), encoding="utf-8")
    monkeypatch.setattr(pages.records, "ROOT", tmp_path)
    assert pages.differences(names=(name,)) == [name]
    assert pages.differences(write=True, names=(name,)) == [name]
    assert (tmp_path / name).read_text(encoding="utf-8") == expected
    assert pages.differences(names=(name,)) == []


def test_a_new_page_nobody_listed_is_refused(tmp_path, monkeypatch, capsys):
    (tmp_path / "docs" / "results").mkdir(parents=True)
    (tmp_path / "docs" / "results" / "new.md").write_text("# typed by hand: 99.9\n", encoding="utf-8")
    monkeypatch.setattr(pages.records, "ROOT", tmp_path)
    monkeypatch.setattr(pages.records, "RESULTS", tmp_path / "docs" / "results")
    assert "docs/results/new.md" in pages.unlisted()
    assert main(["--check"]) == 1
    assert "new.md" in capsys.readouterr().err
