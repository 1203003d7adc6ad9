"""`deca prepare` end to end through the CLI: modes, Beam options passed through, errors."""
from __future__ import annotations

import json
import shutil

import pytest

from deca.cli import main
from deca.schema import read_split
from pipelines.vocab import load_counts


@pytest.fixture
def params(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("prepare:\n  rows_per_shard: 3\n  vocab_size: 7\n", encoding="utf-8")
    return str(path)


def test_prepare_then_vocab(fixture_corpora, tmp_path, params, capsys):
    out = tmp_path / "processed"
    rc = main(["prepare", "--tasks", "sst,schema", "--mirror", str(fixture_corpora), "--out", str(out),
               "--params", params, "--runner", "BundleBasedDirectRunner"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "sst" in printed and "schema" in printed and "examples" in printed
    assert read_split(out, "sst", "train").num_rows == 4
    assert len(list((out / "schema" / "train").glob("part-*.parquet"))) > 1  # rows_per_shard from --params
    vocab_path = tmp_path / "vocab.txt"
    rc = main(["prepare", "--vocab", str(vocab_path), "--tasks", "sst", "schema", "--out", str(out),
               "--params", params])
    assert rc == 0
    assert len(load_counts(vocab_path)) == 7
    assert str(vocab_path) in capsys.readouterr().out


def test_splits_option_and_beam_flags_pass_through(fixture_corpora, tmp_path, params):
    out = tmp_path / "processed"
    rc = main(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(fixture_corpora),
               "--out", str(out), "--params", params, "--direct_num_workers=1", "--direct_running_mode", "in_memory"])
    assert rc == 0
    assert sorted(p.name for p in (out / "sst").iterdir()) == ["dropped.parquet", "stats.json", "validation"]
    assert list(json.loads((out / "sst" / "stats.json").read_text())["splits"]) == ["validation"]


def test_bad_raw_file_names_file_and_line_and_leaves_nothing(fixture_corpora, tmp_path, params, capsys):
    mirror = tmp_path / "mirror"
    shutil.copytree(fixture_corpora / "sst", mirror / "sst")
    bad = mirror / "sst" / "dev_binary_sent.csv"
    with open(bad, "a", encoding="utf-8") as f:
        f.write("7,not a label\n")
    line = len(bad.read_text().splitlines())
    out = tmp_path / "processed"
    rc = main(["prepare", "--tasks", "sst", "--mirror", str(mirror), "--out", str(out), "--params", params])
    assert rc == 1
    err = capsys.readouterr().err
    assert f"error: {bad}:{line}: malformed row" in err
    assert "fix:" in err
    assert not out.exists()  # the folder this run made is gone again: nothing half-written, nothing empty


def test_invalid_utf8_is_reported(fixture_corpora, tmp_path, params, capsys):
    mirror = tmp_path / "mirror"
    shutil.copytree(fixture_corpora / "sst", mirror / "sst")
    bad = mirror / "sst" / "test_binary_sent.csv"
    bad.write_bytes(bad.read_bytes() + b"1,caf\xe9 au lait\n")
    rc = main(["prepare", "--tasks", "sst", "--mirror", str(mirror), "--out", str(tmp_path / "o"), "--params", params])
    assert rc == 1
    assert f"{bad}:" in capsys.readouterr().err


def test_missing_raw_files_say_how_to_get_them(tmp_path, params, capsys):
    rc = main(["prepare", "--tasks", "sst", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "o"),
               "--params", params])
    assert rc == 1
    err = capsys.readouterr().err
    assert str(tmp_path / "raw" / "sst" / "train_binary_sent.csv") in err
    assert "deca download --tasks sst" in err


def test_unknown_option_is_an_error(fixture_corpora, tmp_path, params, capsys):
    rc = main(["prepare", "--tasks", "sst", "--mirror", str(fixture_corpora), "--out", str(tmp_path),
               "--params", params, "--no-such-option", "1"])
    assert rc == 1
    assert "--no-such-option" in capsys.readouterr().err


def test_help_documents_both_modes_and_beam_options(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["prepare", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for needle in ("--vocab", "--mirror", "--splits", "--runner", "FlinkRunner", "direct_num_workers"):
        assert needle in text


def test_a_full_disk_while_beam_writes_is_one_line_naming_the_output_file(fixture_corpora, tmp_path, params,
                                                                           monkeypatch, capsys):
    import errno

    import pyarrow.parquet as pq

    def full_disk(table, where, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(pq, "write_table", full_disk)  # how pyarrow fails on a full disk (no file name)
    out = tmp_path / "processed"
    rc = main(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(fixture_corpora),
               "--out", str(out), "--params", params])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err, err
    assert "ERROR" not in err and err.splitlines()[-2:] == [  # (Beam's own traceback log is left out too)
        f"error: {out / 'sst' / 'validation' / 'part-00000.parquet'}: No space left on device",
        f"  fix: free space on the disk that holds {out} (or write the output elsewhere), then run it again"], err
    assert not out.exists()  # no staging directory left, nothing swapped in, and no empty folder this run made


def test_a_write_error_a_worker_sent_as_text_is_found(tmp_path):
    from pipelines import sinks

    staging = tmp_path / "out" / ".staging-host-1-abc"
    text = (f"Traceback (most recent call last):\n  ...\ndeca.errors.WriteError: {staging}/sst/train/part-00003.parquet:"
            f" No space left on device\n  fix: free space ... [while running 'Convert']")
    err = sinks.write_error_of(RuntimeError(text), staging, tmp_path / "out")
    assert err.errno == 28 and err.filename == str(tmp_path / "out" / "sst" / "train" / "part-00003.parquet")
    assert sinks.write_error_of(RuntimeError("something else"), staging, tmp_path / "out") is None
