"""The prepare Beam pipeline (in-process FnApiRunner) on the SST fixture and a fake task with drops."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from deca.config import PrepareConfig
from deca.errors import ConfigError, DataError
from deca.registry import all_tasks, get_task
from deca.schema import DROPPED_SCHEMA, EXAMPLE_SCHEMA, read_split
from deca.text import tokenize
from pipelines import prepare
from pipelines.rows import to_row
from pipelines.stats import FIELDS
from tests.pipelines.prepare_helpers import FAKE, TRAIN, register_fake, write_fake_corpus


def run_prepare(names, raw_root, out, cfg=None, splits=None, beam_args=()):
    cfg = cfg or PrepareConfig()
    job = prepare.make_job(names, raw_root, out, cfg, splits=splits, from_mirror=True)
    return prepare.run(job, cfg, beam_args)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory, fixture_corpora):
    """sst (fixture corpus) + the fake task, prepared once for the module: 2 rows per shard, batches of 2."""
    with pytest.MonkeyPatch.context() as mp:
        register_fake(mp)
        raw = tmp_path_factory.mktemp("raw")
        for f in (fixture_corpora / "sst").iterdir():
            (raw / "sst").mkdir(exist_ok=True)
            (raw / "sst" / f.name).write_bytes(f.read_bytes())
        write_fake_corpus(raw)
        out = tmp_path_factory.mktemp("processed")
        result = run_prepare(["sst", FAKE], raw, out, PrepareConfig(rows_per_shard=2, batch_size=2))
    return {"raw": raw, "out": out, "result": result}


def plain_rows(name: str, split: str, raw: Path) -> list[dict]:
    """What the pipeline must produce, computed by a plain loop (reader order, drops left out)."""
    task = get_task(name)
    options = task.make_options()
    out = []
    for ex in task.read(split, task.files(split, raw), options):
        if hasattr(ex, "reason"):
            continue
        row = to_row(task, split, ex, options)
        if isinstance(row, dict):
            out.append(row)
    return out


def test_parquet_round_trips_with_the_schema_and_reader_order(prepared):
    with pytest.MonkeyPatch.context() as mp:
        register_fake(mp)
        for name in ("sst", FAKE):
            for split in get_task(name).splits:
                table = read_split(prepared["out"], name, split)
                assert table.schema.equals(EXAMPLE_SCHEMA)
                for shard in (prepared["out"] / name / split).glob("*.parquet"):
                    assert pq.read_schema(shard).equals(EXAMPLE_SCHEMA)
                assert table.to_pylist() == plain_rows(name, split, prepared["raw"])


def test_shards_hold_consecutive_examples(prepared):
    shards = sorted(p.name for p in (prepared["out"] / "sst" / "train").glob("*.parquet"))
    assert shards == ["part-00000.parquet", "part-00001.parquet"]  # 4 examples, 2 per shard
    first = pq.read_table(prepared["out"] / "sst" / "train" / shards[0]).column("id").to_pylist()
    assert first == ["train-1", "train-2"]


def test_ids_unique_and_task_split_columns(prepared):
    for name, split in (("sst", "train"), ("sst", "validation"), ("sst", "test"), (FAKE, "train")):
        rows = read_split(prepared["out"], name, split, columns=["id", "task", "split"]).to_pylist()
        assert len({r["id"] for r in rows}) == len(rows)
        assert {(r["task"], r["split"]) for r in rows} == {(name, split)}


def test_stats_json_matches_the_rows(prepared):
    for name in ("sst", FAKE):
        stats = json.loads((prepared["out"] / name / "stats.json").read_text())
        assert stats["task"] == name
        assert list(stats["splits"]) == ["train", "validation", "test"]
        for split, entry in stats["splits"].items():
            rows = read_split(prepared["out"], name, split).to_pylist()
            assert entry["examples"] == len(rows)
            for field in FIELDS:
                lengths = [len(r[f"{field}_tokens"]) for r in rows]
                tok = entry["tokens"][field]
                assert tok["sum"] == sum(lengths)
                assert tok["max"] == max(lengths, default=0)
                assert tok["mean"] == (round(sum(lengths) / len(lengths), 3) if rows else 0.0)
    fake = json.loads((prepared["out"] / FAKE / "stats.json").read_text())
    assert fake["splits"]["train"]["dropped"] == {"hook_drop": 1, "skipped_label": 1}
    assert fake["splits"]["test"]["dropped"] == {"hook_drop": 1}
    assert fake["options"] == {"max_tokens": 1000}
    assert prepared["result"].stats[FAKE] == fake


def test_dropped_examples_are_written_with_reasons(prepared):
    table = pq.read_table(prepared["out"] / FAKE / "dropped.parquet")
    assert table.schema.equals(DROPPED_SCHEMA)
    got = [(r["split"], r["id"], r["reason"]) for r in table.to_pylist()]
    assert got == [("train", "t3", "skipped_label"), ("train", "t4", "hook_drop"), ("test", "x1", "hook_drop")]
    assert table.to_pylist()[0]["detail"] == "line 3" and table.to_pylist()[0]["task"] == FAKE
    kept = set(read_split(prepared["out"], FAKE, "train", columns=["id"]).column("id").to_pylist())
    assert kept == {"t1", "t2", "t5", "t6"}
    assert pq.read_table(prepared["out"] / "sst" / "dropped.parquet").num_rows == 0


def test_a_split_without_examples_gets_an_empty_shard(prepared):
    shards = list((prepared["out"] / FAKE / "test").glob("*.parquet"))
    assert [p.name for p in shards] == ["part-00000.parquet"]
    table = pq.read_table(shards[0])
    assert table.num_rows == 0 and table.schema.equals(EXAMPLE_SCHEMA)


def test_counters(prepared):
    c = prepared["result"].counters
    assert c[f"{FAKE}.train.read"] == 5 and c[f"{FAKE}.train.rows"] == 4
    assert c[f"{FAKE}.train.dropped.skipped_label"] == 1 and c[f"{FAKE}.train.dropped.hook_drop"] == 1
    assert c["sst.train.rows"] == 4 and c["sst.train.shards"] == 2
    summary = prepare.job_summary(prepared["result"])
    assert "hook_drop=1, skipped_label=1" in summary and "sst" in summary


def test_output_is_byte_identical_on_another_runner(prepared, tmp_path, monkeypatch):
    register_fake(monkeypatch)
    run_prepare(["sst", FAKE], prepared["raw"], tmp_path, PrepareConfig(rows_per_shard=2, batch_size=3),
                beam_args=["--runner=BundleBasedDirectRunner"])
    a = sorted(p.relative_to(prepared["out"]) for p in prepared["out"].rglob("*") if p.is_file())
    b = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert a == b
    for rel in a:
        assert (prepared["out"] / rel).read_bytes() == (tmp_path / rel).read_bytes(), rel


def test_task_options_come_from_params(tmp_path, monkeypatch):
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw")
    cfg = PrepareConfig(task_options={"fake_drops": {"max_tokens": 5}})
    result = run_prepare([FAKE], raw, tmp_path / "out", cfg, splits=["train"])
    kept = read_split(tmp_path / "out", FAKE, "train", columns=["id"]).column("id").to_pylist()
    expected = [i for i, label, text in TRAIN if label != "skip" and "drop" not in text and len(tokenize(text)) <= 5]
    assert kept == expected == ["t5"]
    assert result.stats[FAKE]["splits"]["train"]["dropped"]["too_long"] == 3
    assert result.stats[FAKE]["options"] == {"max_tokens": 5}
    with pytest.raises(ConfigError, match="fake_drop"):
        prepare.task_options(PrepareConfig(task_options={"fake_drop": {}}), [FAKE])
    with pytest.raises(ConfigError, match="max_token"):
        prepare.task_options(PrepareConfig(task_options={"fake_drops": {"max_token": 1}}), [FAKE])


def test_rerunning_some_splits_keeps_the_others(prepared, tmp_path, monkeypatch):
    register_fake(monkeypatch)
    out = tmp_path / "out"
    run_prepare([FAKE], prepared["raw"], out)
    train_before = {p.name: p.read_bytes() for p in (out / FAKE / "train").iterdir()}
    raw = write_fake_corpus(tmp_path / "raw2", validation=[("v9", "yes", "new validation")],
                            train=[("n1", "yes", "changed train")])
    run_prepare([FAKE], raw, out, splits=["validation"])
    assert {p.name: p.read_bytes() for p in (out / FAKE / "train").iterdir()} == train_before
    assert read_split(out, FAKE, "validation").column("id").to_pylist() == ["v9"]
    stats = json.loads((out / FAKE / "stats.json").read_text())
    assert list(stats["splits"]) == ["train", "validation", "test"]
    assert stats["splits"]["train"]["examples"] == 4 and stats["splits"]["validation"]["examples"] == 1
    dropped = [(r["split"], r["id"]) for r in pq.read_table(out / FAKE / "dropped.parquet").to_pylist()]
    assert dropped == [("train", "t3"), ("train", "t4"), ("test", "x1")]
    assert sorted(p.name for p in out.iterdir()) == [FAKE]  # no staging or replaced directory is left


def test_duplicate_ids_are_an_error(tmp_path, monkeypatch):
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw", train=[("d1", "yes", "a"), ("d1", "no", "b")])
    with pytest.raises(DataError, match=r"id 'd1' occurs 2 times") as err:
        run_prepare([FAKE], raw, tmp_path / "out", splits=["train"])
    assert str(raw / "fake" / "train.tsv") in str(err.value)
    assert not (tmp_path / "out" / FAKE).exists()


def test_plan_splits():
    assert prepare.plan_splits(["sst"], ["validation", "train"]) == {"sst": ["train", "validation"]}
    assert prepare.plan_splits(["squad"]) == {"squad": ["train", "validation"]}
    with pytest.raises(ConfigError, match="unknown split"):
        prepare.plan_splits(["sst"], ["dev"])
    eval_only = next((n for n, t in all_tasks().items() if t.eval_only and "train" not in t.splits), None)
    if eval_only:
        with pytest.raises(ConfigError, match="has none of the splits"):
            prepare.plan_splits([eval_only], ["train"])


def test_every_fixture_task_prepares(fixture_corpora, tmp_path):
    names = list(all_tasks())
    result = run_prepare(names, fixture_corpora, tmp_path)
    for name in names:
        stats = json.loads((tmp_path / name / "stats.json").read_text())
        assert list(stats["splits"]) == [s for s in ("train", "validation", "test") if s in get_task(name).splits]
        for split, entry in stats["splits"].items():
            assert read_split(tmp_path, name, split).num_rows == entry["examples"]
        assert (tmp_path / name / "dropped.parquet").exists()
    assert set(result.stats) == set(names)
    assert not list(tmp_path.glob(".staging-*"))


def test_rerunning_one_task_replaces_only_its_directory(prepared, tmp_path, monkeypatch):
    register_fake(monkeypatch)
    out = tmp_path / "out"
    run_prepare(["sst", FAKE], prepared["raw"], out)
    fake_before = {p: p.read_bytes() for p in (out / FAKE).rglob("*") if p.is_file()}
    fake_inodes = {p: p.stat().st_ino for p in fake_before}
    sst_inode = (out / "sst" / "stats.json").stat().st_ino
    run_prepare(["sst"], prepared["raw"], out)
    assert {p: p.read_bytes() for p in (out / FAKE).rglob("*") if p.is_file()} == fake_before
    assert {p: p.stat().st_ino for p in fake_before} == fake_inodes  # not even rewritten
    assert (out / "sst" / "stats.json").stat().st_ino != sst_inode  # replaced
    assert sorted(p.name for p in out.iterdir()) == sorted(["sst", FAKE])


def test_urls_are_rejected_with_a_clear_message(tmp_path):
    with pytest.raises(ConfigError, match="URLs are not supported"):
        prepare.make_job(["sst"], tmp_path, "gs://bucket/processed", PrepareConfig())


@pytest.mark.parametrize("name", ["srl", "zre", "multinli.in.out", "schema", "cnn_dailymail", "sst", "woz.en"])
def test_a_0_byte_split_file_is_refused_and_nothing_is_written(name, fixture_corpora, tmp_path):
    """Before, srl, zre, multinli, schema and cnn_dailymail read an empty file as an empty (or shrunken) split."""
    import shutil

    task = get_task(name)
    raw = tmp_path / "raw"
    for split in task.splits:
        for rel in task.splits[split]:
            (raw / rel).parent.mkdir(parents=True, exist_ok=True)
            src = fixture_corpora / rel
            shutil.copytree(src, raw / rel, dirs_exist_ok=True) if src.is_dir() else shutil.copy(src, raw / rel)
    split = "validation" if "validation" in task.splits else next(iter(task.splits))
    victim = next(p for p in task.files(split, raw) if p.is_file())
    victim.write_bytes(b"")
    with pytest.raises(DataError, match="empty") as err:
        run_prepare([name], raw, tmp_path / "out")
    assert str(victim) in str(err.value)
    assert not (tmp_path / "out" / name).exists()


def test_a_split_file_without_any_example_is_refused(fixture_corpora, tmp_path):
    raw = tmp_path / "raw"
    (raw / "srl").mkdir(parents=True)
    for rel in get_task("srl").splits["train"]:
        (raw / rel).write_text("\n\n\n", encoding="utf-8")  # not 0 bytes, but no record
    with pytest.raises(DataError, match="no train examples"):
        run_prepare(["srl"], raw, tmp_path / "out", splits=["train"])
