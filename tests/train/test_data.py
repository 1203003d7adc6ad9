import numpy as np
import pyarrow as pa
import pytest

from deca.errors import DataError
from deca.schema import EXAMPLE_SCHEMA
from tests.mini_data import write_rows
from train import data as data_module
from train.data import (MultiTaskData, TaskData, TokenBudgetStream, cut_batches, example_costs, read_share,
                        take_rows)


def synthetic_rows(n, seed=0, task="sst"):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        c, q, a = (int(x) for x in rng.integers(1, 30, size=3))
        rows.append({"id": f"x-{i}", "task": task, "split": "train", "context": "c", "question": "q",
                     "answer": "a", "answers": ["a"], "context_tokens": [f" c{i} "] * c,
                     "question_tokens": [" q "] * q, "answer_tokens": [" a "] * a, "gold": None})
    return rows


def table(rows):
    return pa.Table.from_pylist(rows, schema=EXAMPLE_SCHEMA)


def cost(row):
    return len(row["context_tokens"]) + len(row["question_tokens"]) + 5 * len(row["answer_tokens"])


def test_example_costs_follow_the_paper_rule():
    rows = synthetic_rows(5)
    assert example_costs(table(rows)).tolist() == [cost(r) for r in rows]


def test_cut_batches_respects_budget_and_keeps_oversized_examples():
    costs = np.array([4, 4, 4, 20, 3, 3])
    batches = cut_batches(np.arange(6), costs, 10)
    assert [b.tolist() for b in batches] == [[0, 1], [2], [3], [4, 5]]


def test_batches_cover_each_epoch_exactly_once_under_budget():
    rows = synthetic_rows(300, seed=1)
    data = TaskData("sst", table(rows), budget=400, seed=7, pool_batches=5)
    costs = data.costs
    plan = data.stream.plan(0)
    flat = np.concatenate(plan)
    assert sorted(flat.tolist()) == list(range(300))
    assert all(costs[b].sum() <= 400 or len(b) == 1 for b in plan)
    # length bucketing: batches are far more homogeneous in length than random batches
    spread = np.mean([np.ptp(data.stream.sort_keys[b]) for b in plan if len(b) > 1])
    rng = np.random.default_rng(0)
    random_spread = np.mean([np.ptp(data.stream.sort_keys[rng.choice(300, len(b))]) for b in plan if len(b) > 1])
    assert spread < random_spread / 2
    # batches are shuffled, not in length order
    firsts = [data.stream.sort_keys[b].min() for b in plan]
    assert firsts != sorted(firsts)


def test_streams_are_seeded_endless_and_resume_exactly():
    rows = synthetic_rows(50, seed=2)
    make = lambda seed: TaskData("sst", table(rows), budget=600, seed=seed).stream  # noqa: E731
    a, b = make(3), make(3)
    first = [next(a).tolist() for _ in range(40)]  # several epochs
    assert first == [next(b).tolist() for _ in range(40)]
    assert a.epoch >= 2
    assert [next(make(4)).tolist() for _ in range(3)] != first[:3]
    # resume from the middle of an epoch
    c = make(3)
    for _ in range(17):
        next(c)
    state = c.state_dict()
    d = make(3)
    d.load_state_dict(state)
    assert [next(d).tolist() for _ in range(23)] == first[17:]
    # epochs are reshuffled
    assert [b.tolist() for b in a.plan(0)] != [b.tolist() for b in a.plan(1)]


def test_stream_rejects_bad_input():
    with pytest.raises(ValueError):
        TokenBudgetStream(np.array([1]), np.array([1]), 0, [1])
    with pytest.raises(ValueError):
        TokenBudgetStream(np.array([], dtype=int), np.array([]), 10, [1])


def test_workers_read_disjoint_shares(tmp_path):
    rows = synthetic_rows(11)
    write_rows(tmp_path, "sst", "train", rows)
    shares = [read_share(tmp_path, "sst", "train", r, 3, columns=["id"])["id"].to_pylist() for r in range(3)]
    assert sorted(sum(shares, [])) == sorted(r["id"] for r in rows)
    assert shares[1] == [rows[i]["id"] for i in range(1, 11, 3)]
    assert read_share(tmp_path, "sst", "train", limit=4).num_rows == 4
    with pytest.raises(DataError, match="no processed Parquet shards.*\n  fix: run `deca prepare --tasks schema`"):
        read_share(tmp_path, "schema", "train")
    with pytest.raises(DataError, match="no examples for worker 11 of 12"):
        read_share(tmp_path, "sst", "train", 11, 12)


def test_a_shard_that_breaks_while_a_worker_reads_it_is_named(tmp_path, monkeypatch):
    import pyarrow as pa
    import pyarrow.parquet as pq

    write_rows(tmp_path, "sst", "train", synthetic_rows(5))

    def broken(self, **kwargs):
        raise pa.ArrowInvalid("Couldn't deserialize thrift: TProtocolException: Invalid data")
        yield

    monkeypatch.setattr(pq.ParquetFile, "iter_batches", broken)
    with pytest.raises(DataError, match=r"part-00000\.parquet: not a readable Parquet shard, truncated or corrupt "
                                        r"\(ArrowInvalid: Couldn't deserialize thrift.*\n  fix: rerun `deca "
                                        r"prepare --tasks sst`"):
        read_share(tmp_path, "sst", "train")


def test_shares_stream_across_shards_into_a_mapped_file_that_is_gone(tmp_path, monkeypatch):
    """Two shards read a few rows at a time: the share, with `limit` and across shard and batch boundaries, is
    the same rows as a whole read; the table is backed by a memory map whose file is already unlinked."""
    import pyarrow.parquet as pq

    rows = synthetic_rows(23)
    out = tmp_path / "processed" / "sst" / "train"
    out.mkdir(parents=True)
    pq.write_table(table(rows[:10]), out / "part-00000.parquet")
    pq.write_table(table(rows[10:]), out / "part-00001.parquet")
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr("tempfile.tempdir", None)
    monkeypatch.setattr(data_module, "SHARE_BATCH_ROWS", 4)
    for rank, world, limit in [(0, 1, None), (1, 3, None), (2, 4, 13), (0, 2, 10), (0, 1, 4)]:
        share = read_share(tmp_path / "processed", "sst", "train", rank, world, columns=["id", "context_tokens"],
                           limit=limit)
        expected = rows[:limit][rank::world]
        assert share["id"].to_pylist() == [r["id"] for r in expected]
        assert share["context_tokens"].to_pylist() == [r["context_tokens"] for r in expected]
        assert share.column_names == ["id", "context_tokens"]
    assert share.column("id").num_chunks >= 1 and list(scratch.iterdir()) == []
    assert read_share(tmp_path / "processed", "sst", "train").to_pylist() == rows


def test_take_rows_reads_each_chunk_for_its_own_rows():
    rows = synthetic_rows(30)
    t = pa.Table.from_batches(table(rows).to_batches(max_chunksize=7))
    batches = t.to_batches()
    starts = np.cumsum([0] + [b.num_rows for b in batches])[:-1]
    idx = np.array([29, 0, 7, 6, 13, 14, 21, 3, 28])
    assert take_rows(batches, starts, idx) == [rows[i] for i in idx]
    data = TaskData("sst", t, budget=200, seed=3)
    got, _ = data.next_batch()
    assert got == t.take(pa.array(data.stream.plan(0)[0])).to_pylist()


def test_multitask_data_rows_tokens_and_state(tmp_path):
    write_rows(tmp_path, "sst", "train", synthetic_rows(40, task="sst"))
    write_rows(tmp_path, "schema", "train", synthetic_rows(30, seed=5, task="schema"))
    data = MultiTaskData(tmp_path, ["sst", "schema"], budget=400, seed=1)
    assert data.num_examples() == {"sst": 40, "schema": 30}  # every worker reads the whole split
    rows, tokens = data.next_batch("schema", rank=1, world=2)
    assert rows and all(r["task"] == "schema" for r in rows)
    assert sum(cost(r) for r in rows) <= 400 or len(rows) == 1
    assert tokens == sum(len(r["context_tokens"]) + len(r["question_tokens"]) + len(r["answer_tokens"])
                         for r in rows)
    assert isinstance(rows[0]["context_tokens"], list)  # token lists kept, nothing re-tokenized
    data.next_batch("sst", rank=1, world=2)
    state = data.state_dict()
    ahead = [[r["id"] for r in data.next_batch(t)[0]] for t in ("sst", "schema", "sst")]
    fresh = MultiTaskData(tmp_path, ["sst", "schema"], budget=400, seed=1)  # any worker of any group resumes it
    fresh.load_state_dict(state)
    assert [[r["id"] for r in fresh.next_batch(t)[0]] for t in ("sst", "schema", "sst")] == ahead
    per_worker = {"rank": 1, "world_size": 2, "streams": state["streams"]}  # written when each worker cut its own
    with pytest.raises(ValueError, match="worker 1 of 2 was written when each worker cut its own batches"):
        fresh.load_state_dict(per_worker)
    fresh.load_state_dict({"rank": 0, "world_size": 1, "streams": state["streams"]})  # one worker's: the same stream


def test_fixture_data(mini_data):
    processed, vocab, tasks = mini_data
    data = MultiTaskData(processed, tasks, budget=10000, seed=0)
    rows, _ = data.next_batch("sst")
    assert len(rows) == data.num_examples()["sst"]  # the miniature split fits in one batch
    assert vocab.read_text().splitlines()[0].split("\t")[0].startswith('"')


def test_exact_bucketing_gives_batches_of_one_context_and_question_length_within_the_budget():
    rng = np.random.default_rng(3)
    rows = synthetic_rows(400, seed=2)
    for r in rows:  # few distinct lengths, as in a real corpus's dense middle
        r["context_tokens"] = r["context_tokens"][:1] * int(rng.integers(5, 9))
        r["question_tokens"] = [" q "] * int(rng.integers(2, 4))
    exact = TaskData("sst", table(rows), budget=300, seed=7, pool_batches=5, bucketing="exact")
    plan = exact.stream.plan(0)
    assert sorted(np.concatenate(plan).tolist()) == list(range(400))
    n = data_module.lengths(table(rows))
    assert all(len(set(n["context"][b])) == 1 and len(set(n["question"][b])) == 1 for b in plan)
    assert all(exact.costs[b].sum() <= 300 or len(b) == 1 for b in plan)
    budget = TaskData("sst", table(rows), budget=300, seed=7, pool_batches=5).stream.plan(0)
    assert any(len(set(n["context"][b])) > 1 for b in budget)  # without it, batches mix lengths
    assert len(plan) < 2 * len(budget)  # only a few more batches: the pools hold several rows per length
    with pytest.raises(ValueError, match="train.bucketing"):
        TaskData("sst", table(rows), budget=300, seed=7, bucketing="bogus")


def test_cut_batches_also_cuts_where_the_group_changes():
    costs = np.array([1, 1, 1, 1, 1])
    groups = np.array([0, 0, 1, 1, 1])
    assert [b.tolist() for b in cut_batches(np.arange(5), costs, 10, groups)] == [[0, 1], [2, 3, 4]]
