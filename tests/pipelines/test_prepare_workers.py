"""The prepare pipeline's output does not depend on the number of workers: shards are planned from the
raw files alone, each converted and written whole where it runs; the cheaper conversion (a tokenization
cache, Arrow batches) gives the same bytes as the plain per-example path."""
from __future__ import annotations

import gc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from deca.config import PrepareConfig
from deca.registry import Dropped, all_tasks, get_task
from deca.schema import EXAMPLE_SCHEMA
from pipelines import beam_options, prepare, sinks
from pipelines import transforms as T
from pipelines import units as U
from pipelines.rows import TextCache, to_row

TWO_PROCESSES = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
TWO_THREADS = ["--direct_num_workers=2", "--direct_running_mode=multi_threading"]


def run(names, raw, out, cfg, beam_args=()):
    job = prepare.make_job(names, raw, out, cfg, from_mirror=True)
    return prepare.run(job, cfg, beam_args)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def assert_same_bytes(a: Path, b: Path) -> None:
    left, right = files(a), files(b)
    assert left and sorted(left) == sorted(right)
    for rel in left:
        assert left[rel] == right[rel], rel


def test_two_threads_write_the_bytes_of_one_worker(fixture_corpora, tmp_path):
    """Two workers (threads: quick) balance several shards per split; same files, same bytes, same counters."""
    names = ["sst", "squad", "woz.en", "srl"]
    cfg = PrepareConfig(rows_per_shard=3, batch_size=2)
    one = run(names, fixture_corpora, tmp_path / "one", cfg)
    two = run(names, fixture_corpora, tmp_path / "two", cfg, TWO_THREADS)
    assert len(list((tmp_path / "one" / "sst" / "train").glob("part-*.parquet"))) > 1
    assert_same_bytes(tmp_path / "one", tmp_path / "two")
    assert one.counters == two.counters and one.stats == two.stats


def test_round_robin_shards_do_not_depend_on_the_workers(fixture_corpora, tmp_path):
    cfg = PrepareConfig(num_shards=2)
    run(["sst", "srl"], fixture_corpora, tmp_path / "one", cfg)
    run(["sst", "srl"], fixture_corpora, tmp_path / "two", cfg, TWO_THREADS)
    assert sorted(p.name for p in (tmp_path / "one" / "sst" / "train").iterdir()) == \
        ["part-00000.parquet", "part-00001.parquet"]
    assert_same_bytes(tmp_path / "one", tmp_path / "two")


def test_two_worker_processes_write_the_bytes_of_one_worker(fixture_corpora, tmp_path):
    """What `deca prepare --direct_num_workers=2 --direct_running_mode=multi_processing` runs: the DoFns
    pickle to two worker processes, which read, convert and write their own shards (about 4 s)."""
    names = list(all_tasks())
    cfg = PrepareConfig(rows_per_shard=4)
    one = run(names, fixture_corpora, tmp_path / "one", cfg)
    two = run(names, fixture_corpora, tmp_path / "two", cfg, TWO_PROCESSES)
    assert_same_bytes(tmp_path / "one", tmp_path / "two")
    assert one.counters == two.counters


def test_units_cover_every_reader_position_once():
    plan = T.PlanSplit({}, {}, {}, rows_per_shard=4)
    units = list(plan.units("t", "train", 10, {0: 1, 2: 1}))  # shard 1 holds only drops
    assert [(u.shard, list(u.positions)) for u in units] == [(0, [0, 1, 2, 3]), (2, [8, 9])]
    robin = T.PlanSplit({}, {}, {}, num_shards=3)
    units = list(robin.units("t", "train", 7, {0: 1, 1: 1, 2: 1}))
    assert sorted(p for u in units for p in u.positions) == list(range(7))
    assert all(U.shard_of(p, 4, 3) == u.shard for u in units for p in u.positions)


def test_the_text_cache_gives_the_rows_of_the_plain_path(fixture_corpora):
    for name in ("squad", "sst", "srl", "woz.en"):
        task = get_task(name)
        options = task.make_options()
        cache = TextCache(max_entries=3)  # small: cleared several times
        for split in task.splits:
            for ex in task.read(split, task.files(split, fixture_corpora), options):
                if isinstance(ex, Dropped):
                    continue
                cached = to_row(task, split, ex, options, cache=cache)
                assert cached == to_row(task, split, ex, options)
                if isinstance(cached, dict):
                    assert cached["context_tokens"] is not to_row(task, split, ex, options, cache=cache)["context_tokens"]


def test_batched_shards_are_the_bytes_of_one_table(tmp_path):
    rows = [{"id": str(i), "task": "t", "split": "train", "context": f"c {i}", "question": "q", "answer": "a",
             "answers": ["a"], "context_tokens": [" c ", f" {i} "], "question_tokens": [" q "],
             "answer_tokens": [" a "], "gold": None} for i in range(10)]
    sinks.write_rows(rows, EXAMPLE_SCHEMA, tmp_path / "one.parquet")
    batches = [sinks.to_batch(rows[i:i + 3], EXAMPLE_SCHEMA) for i in range(0, 10, 3)]
    sinks.write_batches(batches, EXAMPLE_SCHEMA, tmp_path / "batched.parquet")
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "batched.parquet").read_bytes()
    assert pq.read_table(tmp_path / "batched.parquet").equals(pa.Table.from_pylist(rows, schema=EXAMPLE_SCHEMA))


def test_only_worker_processes_skip_the_final_garbage_collection(monkeypatch):
    registered = []
    monkeypatch.setattr(beam_options.atexit, "register", registered.append)
    monkeypatch.setattr(beam_options, "_FAST_EXIT", [])
    monkeypatch.delenv("CONTROL_API_SERVICE_DESCRIPTOR", raising=False)
    assert not beam_options.fast_worker_exit() and registered == []
    monkeypatch.setenv("CONTROL_API_SERVICE_DESCRIPTOR", "url: 'localhost:1'")
    assert beam_options.fast_worker_exit() and beam_options.fast_worker_exit()
    assert registered == [gc.freeze]
