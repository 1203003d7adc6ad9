"""Atomic output: failed runs leave the previous output intact and no staging directory behind."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys

import pytest

from deca.config import PrepareConfig
from deca.errors import DataError
from pipelines import beam_options, prepare, sinks
from tests.pipelines.prepare_helpers import FAKE, FAKE_TASK, register_fake, write_fake_corpus


def snapshot(root):
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_fake(raw, out, task_names=(FAKE,), cfg=None):
    cfg = cfg or PrepareConfig()
    return prepare.run(prepare.make_job(list(task_names), raw, out, cfg, from_mirror=True), cfg)


@pytest.fixture
def previous(tmp_path, monkeypatch):
    """A good run of the fake task: (raw dir, out dir, snapshot of out)."""
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw")
    out = tmp_path / "out"
    run_fake(raw, out)
    return raw, out, snapshot(out)


def test_reader_error_mid_file_keeps_previous_output(previous, tmp_path):
    _, out, before = previous
    bad = write_fake_corpus(tmp_path / "bad", validation=[("v1", "yes", "fine"), ("v2", "no", "fine too"),
                                                          ("v3", "no", "BAD")])
    with pytest.raises(DataError) as err:
        run_fake(bad, out)
    assert str(err.value).startswith(f"{bad / 'fake' / 'validation.tsv'}:3: bad line for testing")
    assert err.value.line == 3 and err.value.fix == "remove it"
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_error_in_one_task_commits_no_task(previous, tmp_path, fixture_corpora):
    _, out, before = previous
    bad = write_fake_corpus(tmp_path / "bad", train=[("t1", "yes", "BAD")])
    (bad / "sst").symlink_to(fixture_corpora / "sst")
    with pytest.raises(DataError, match="train.tsv:1"):
        run_fake(bad, out, task_names=("sst", FAKE))
    assert snapshot(out) == before and not (out / "sst").exists()


def test_row_hook_error_is_reported_with_its_file(previous, tmp_path, monkeypatch):
    raw, out, before = previous

    def hook(row, split, options):
        if row["id"] == "t2":
            raise DataError("somewhere.json", "hook failed", line=7)
        return row

    register_fake(monkeypatch, dataclasses.replace(FAKE_TASK, row_hook=hook))
    with pytest.raises(DataError, match=r"^somewhere.json:7: hook failed"):
        run_fake(raw, out)
    assert snapshot(out) == before


def test_unexpected_exception_removes_staging(previous, monkeypatch):
    raw, out, before = previous

    def broken(split, files, options):
        yield from ()
        raise RuntimeError("bug in a reader")

    register_fake(monkeypatch, dataclasses.replace(FAKE_TASK, read=broken))
    with pytest.raises(Exception, match="bug in a reader"):
        run_fake(raw, out)
    assert snapshot(out) == before
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_missing_raw_file_fails_before_the_pipeline(tmp_path, monkeypatch):
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw")
    (raw / "fake" / "test.tsv").unlink()
    job = prepare.make_job([FAKE], raw, tmp_path / "out", PrepareConfig())
    with pytest.raises(DataError) as err:
        prepare.run(job, PrepareConfig())
    text = str(err.value)
    assert text.startswith(str(raw / "fake" / "test.tsv")) and f"deca download --tasks {FAKE}" in text
    assert "--mirror" in text
    assert not (tmp_path / "out").exists()


def test_staging_commit_swaps_and_abort_cleans(tmp_path):
    out = tmp_path / "out"
    (out / "a" / "train").mkdir(parents=True)
    (out / "a" / "train" / "old.parquet").write_text("old")
    with sinks.Staging(out) as staging:
        (staging.task_dir("a") / "train").mkdir(parents=True)
        (staging.task_dir("a") / "train" / "new.parquet").write_text("new")
        staging.commit("a")
    assert [p.name for p in (out / "a" / "train").iterdir()] == ["new.parquet"]
    assert sorted(p.name for p in out.iterdir()) == ["a"]
    with pytest.raises(KeyboardInterrupt):
        with sinks.Staging(out) as staging:
            (staging.task_dir("a")).mkdir()
            raise KeyboardInterrupt
    assert sorted(p.name for p in out.iterdir()) == ["a"]


def test_leftovers_of_killed_runs_are_removed_but_not_live_ones(tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(proc.stdout)
    host = sinks.new_run_id().split("-")[0]
    dead = tmp_path / f"{sinks.STAGING_PREFIX}{host}-{dead_pid}-abcd1234"
    old = tmp_path / f"{sinks.OLD_PREFIX}{host}-{dead_pid}-abcd1234-sst"  # named by older versions
    swapped = tmp_path / f".sst.old-{dead_pid}"  # named by deca.io.swap_dir
    live = tmp_path / f"{sinks.STAGING_PREFIX}{host}-{os.getpid()}-abcd1234"
    live_swap = tmp_path / f".sst.old-{os.getpid()}"
    other_host = tmp_path / f"{sinks.STAGING_PREFIX}otherhost-{dead_pid}-abcd1234"
    for d in (dead, old, swapped, live, live_swap, other_host, tmp_path / "sst"):
        d.mkdir()
    removed = sinks.remove_stale(tmp_path)
    assert sorted(removed) == sorted([dead, old, swapped])
    assert live.exists() and live_swap.exists() and other_host.exists() and (tmp_path / "sst").exists()


def test_unwrap_data_error_from_a_runner_message():
    wrapped = RuntimeError("deca.errors.DataError: data/x.json:12: truncated JSON\n  fix: re-download it "
                           "[while running 'Read']")
    err = beam_options.unwrap_data_error(wrapped)
    assert isinstance(err, DataError)
    assert str(err) == "data/x.json:12: truncated JSON\n  fix: re-download it"
    assert err.path == "data/x.json" and err.line == 12
    assert beam_options.unwrap_data_error(RuntimeError("other")) is None
    try:
        try:
            raise DataError("f.csv", "bad", line=2)
        except DataError as inner:
            raise RuntimeError("wrapped") from inner
    except RuntimeError as outer:
        assert beam_options.unwrap_data_error(outer).line == 2
