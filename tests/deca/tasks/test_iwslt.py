import re
import shutil

import pytest

from deca.errors import DataError
from deca.registry import Dropped, Example, get_task
from deca.tasks.iwslt import read_xml
from deca.text import detokenize
from pipelines.rows import to_row
from tests.deca.tasks._check import read_records

IWSLT14 = "iwslt/IWSLT14_de-en_fairseq/de-en"


def read(split, root):
    return read_records("iwslt.en.de", split, root)


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("iwslt.en.de")
    records = read("train", fixture_corpora)
    examples = [r for r in records if isinstance(r, Example)]
    row = to_row(task, "train", examples[0])
    assert row["id"] == "train-7"  # the first text line after six metadata lines
    assert row["question"] == "translate from english to german"
    assert row["context"] == "i want to tell you about a quiet lab."
    assert row["answer"] == "ich möchte ihnen von einem stillen labor erzählen."
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert row["gold"] is None


def test_train_tags_metadata_removed_per_file_and_empty_sides_counted(fixture_corpora):
    records = read("train", fixture_corpora)
    # the German file has two more metadata lines per talk (<reviewer>, <translator>): still aligned
    pairs = [(r.context, r.answer) for r in records if isinstance(r, Example)]
    assert pairs == [
        ("I want to tell you about a quiet lab.", "Ich möchte Ihnen von einem stillen Labor erzählen."),
        ("Nobody there ever raises their voice -- not even once.",
         "Niemand dort wird je laut -- nicht ein einziges Mal."),
        ("Thank you.", "Danke."),
        ("Bridges connect   people.", "Brücken verbinden Menschen."),
        ("So let's build more of them.", "Also lasst uns mehr davon bauen."),
    ]
    (drop,) = [r for r in records if isinstance(r, Dropped)]
    assert drop.reason == "empty_side" and drop.detail == "train.tags.en-de.en:9 / train.tags.en-de.de:11"
    assert len({r.id for r in records}) == len(records)


def test_xml_splits(fixture_corpora):
    validation = read("validation", fixture_corpora)
    assert [(e.id, e.context, e.answer) for e in validation][0] == (
        "9101-1", "Small things matter & add up.", "Kleine Dinge zählen & summieren sich.")
    test = read("test", fixture_corpora)
    assert [e.id for e in test] == ["9201-1", "9201-2", "9202-1"]
    assert test[2].answer == "Flüsse erinnern sich."


@pytest.mark.corpora
def test_real_iwslt14_xml_pairs_align(shared_corpora):
    folder = shared_corpora / IWSLT14
    pairs = sorted(folder.glob("*.en.xml"))
    if not pairs:
        pytest.skip(f"no IWSLT XML files in {folder}")
    total = expected_total = 0
    for en in pairs:
        de = en.with_name(en.name[: -len("en.xml")] + "de.xml")
        records = list(read_xml(en, de))
        n_en = len(re.findall(r"<seg id=", en.read_text(encoding="utf-8")))
        n_de = len(re.findall(r"<seg id=", de.read_text(encoding="utf-8")))
        assert n_en == n_de == len(records), en.name
        assert all(isinstance(r, Example) and r.context and r.answer for r in records)
        assert len({r.id for r in records}) == len(records)
        total += len(records)
        expected_total += n_en
    assert total == expected_total == 6750
    first = next(read_xml(folder / "IWSLT14.TED.tst2010.de-en.en.xml", folder / "IWSLT14.TED.tst2010.de-en.de.xml"))
    assert first.context.startswith("One day, Los Angeles Times columnist Steve Lopez")
    assert first.answer.startswith("Als Steve Lopez, Kolumnist der Los Angeles Times")


def _copy(fixture_corpora, tmp_path):
    shutil.copytree(fixture_corpora / "iwslt", tmp_path / "iwslt")
    return tmp_path / "iwslt" / "en-de"


def test_segment_count_mismatch_names_both_files(fixture_corpora, tmp_path):
    d = _copy(fixture_corpora, tmp_path)
    de = d / "IWSLT16.TED.tst2014.en-de.de.xml"
    de.write_text(de.read_text(encoding="utf-8").replace('<seg id="1"> Flüsse erinnern sich. </seg>\n', ""),
                  encoding="utf-8")
    with pytest.raises(DataError, match="3 <seg> elements here but 2 in") as exc:
        read("test", tmp_path)
    assert exc.value.path == str(d / "IWSLT16.TED.tst2014.en-de.en.xml") and str(de) in str(exc.value)


def test_segment_id_mismatch_and_invalid_xml(fixture_corpora, tmp_path):
    d = _copy(fixture_corpora, tmp_path)
    de = d / "IWSLT16.TED.tst2013.en-de.de.xml"
    text = de.read_text(encoding="utf-8")
    de.write_text(text.replace('<seg id="2">', '<seg id="7">'), encoding="utf-8")
    with pytest.raises(DataError, match="faces doc '9101' seg '7'") as exc:
        read("validation", tmp_path)
    assert exc.value.line == 11 and f"line 11 of {de}" in str(exc.value)
    de.write_text(text.replace("</seg>\n</doc>", "</seg>\n</dok>"), encoding="utf-8")
    with pytest.raises(DataError, match="invalid XML") as exc:
        read("validation", tmp_path)
    assert exc.value.path == str(de) and exc.value.line == 12


def test_train_line_mismatch_and_invalid_utf8(fixture_corpora, tmp_path):
    d = _copy(fixture_corpora, tmp_path)
    de = d / "train.tags.en-de.de"
    original = de.read_bytes()
    de.write_bytes(original + b"Noch eine Zeile.\n")
    with pytest.raises(DataError, match="6 text lines here but 7 in") as exc:
        read("train", tmp_path)
    assert exc.value.path == str(d / "train.tags.en-de.en") and str(de) in str(exc.value)
    de.write_bytes(original.replace("Danke.".encode(), b"Dank\xe4."))
    with pytest.raises(DataError, match="UTF-8") as exc:
        read("train", tmp_path)
    assert (exc.value.path, exc.value.line) == (str(de), 12)
