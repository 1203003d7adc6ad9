"""The vocabulary combine: counts over the processed train splits, top N, ties by token, deterministic."""
from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from deca.config import PrepareConfig
from deca.errors import DataError
from deca.schema import iter_rows
from pipelines import prepare, vocab
from tests.pipelines.prepare_helpers import FAKE, register_fake, write_fake_corpus


def reference(pairs, size):
    return sorted(pairs, key=lambda kv: (-kv[1], kv[0]))[:size]


def combine(fn, chunks):
    """Run a CombineFn by hand: one accumulator per chunk, merged in the given order."""
    accs = []
    for chunk in chunks:
        acc = fn.create_accumulator()
        for kv in chunk:
            acc = fn.add_input(acc, kv)
        accs.append(acc)
    return fn.extract_output(fn.merge_accumulators(accs))


def test_top_tokens_ties_alphabetical_and_independent_of_grouping():
    rng = random.Random(0)
    pairs = [(f"tok{i:04d}", rng.randint(1, 6)) for i in range(3000)]  # many ties
    fn = vocab.TopTokensFn(5)
    want = reference(pairs, 5)
    assert combine(fn, [pairs]) == want
    shuffled = pairs[:]
    rng.shuffle(shuffled)
    assert combine(fn, [shuffled[i::7] for i in range(7)]) == want
    assert combine(vocab.TopTokensFn(2), [[("b", 2), ("a", 2), ("c", 3), ("d", 1)]]) == [("c", 3), ("a", 2)]
    assert combine(vocab.TopTokensFn(10), [[]]) == []


def test_format_and_load_round_trip(tmp_path):
    pairs = [(" the ", 10), ('"', 3), ("\t", 2), ("ü", 1)]
    text = vocab.format_vocab(pairs)
    assert text.splitlines()[0] == '" the "\t10'
    assert text.splitlines()[1] == '"\\""\t3'
    (tmp_path / "v.txt").write_text(text, encoding="utf-8")
    assert vocab.load_counts(tmp_path / "v.txt") == pairs


@pytest.fixture
def processed(tmp_path, monkeypatch, fixture_corpora):
    register_fake(monkeypatch)
    raw = write_fake_corpus(tmp_path / "raw")
    (raw / "sst").symlink_to(fixture_corpora / "sst")
    out = tmp_path / "processed"
    cfg = PrepareConfig(rows_per_shard=2)
    prepare.run(prepare.make_job(["sst", FAKE], raw, out, cfg, from_mirror=True), cfg)
    return out


def counts_from_parquet(out, tasks):
    counter = Counter()
    for task in tasks:
        for row in iter_rows(out, task, "train"):
            for field in ("context_tokens", "question_tokens", "answer_tokens"):
                counter.update(row[field])
    return counter


def test_vocab_pipeline_matches_a_plain_count_and_is_deterministic(processed, tmp_path):
    path = tmp_path / "vocab.txt"
    info = vocab.run(["sst", FAKE], processed, path, PrepareConfig(), size=12)
    first = path.read_bytes()
    assert info["size"] == 12 and info["tasks"] == ["sst", FAKE]
    want = reference(list(counts_from_parquet(processed, ["sst", FAKE]).items()), 12)
    assert vocab.load_counts(path) == want
    lines = first.decode().splitlines()
    assert all(json.loads(line.split("\t")[0]) == tok for line, (tok, _) in zip(lines, want))
    vocab.run(["sst", FAKE], processed, path, PrepareConfig(), size=12,
              beam_args=["--runner=BundleBasedDirectRunner"])
    assert path.read_bytes() == first
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_vocab_counts_training_splits_only(processed, tmp_path):
    path = tmp_path / "vocab.txt"
    vocab.run([FAKE], processed, path, PrepareConfig(vocab_size=100000))
    tokens = dict(vocab.load_counts(path))
    assert " zzvalidonly " not in tokens  # only in the validation split
    assert " never " not in tokens  # dropped by the reader
    assert tokens[" zebra "] == 3 and tokens[" what "] == 4  # 4 kept training examples


def test_vocab_skips_eval_only_tasks_and_needs_processed_train(processed, tmp_path):
    assert vocab.vocab_tasks(["sst", "yelp"]) == ["sst"]
    with pytest.raises(DataError, match=r"deca prepare --tasks woz.en"):
        vocab.run(["woz.en"], processed, tmp_path / "v.txt", PrepareConfig())
    assert not (tmp_path / "v.txt").exists()


def test_a_zero_vocabulary_size_is_refused_not_replaced(processed, tmp_path):
    """`--vocab-size 0` used to build the default 50,000-token vocabulary silently."""
    from deca.config import PrepareConfig
    from deca.errors import ConfigError
    from pipelines import vocab

    with pytest.raises(ConfigError, match=r"vocabulary size 0 \(--vocab-size or prepare.vocab_size\): must be >= 1"):
        vocab.run(["sst"], processed, tmp_path / "v.txt", PrepareConfig(), size=0)
    assert not (tmp_path / "v.txt").exists()


def test_a_pipeline_that_writes_nothing_keeps_the_old_vocabulary(processed, tmp_path, monkeypatch):
    import apache_beam as beam

    path = tmp_path / "vocab.txt"
    path.write_text("old\n", encoding="utf-8")
    monkeypatch.setattr(vocab, "build", lambda p, files, size, tmp: p | beam.Create([1]))
    with pytest.raises(DataError, match="the vocabulary pipeline wrote nothing"):
        vocab.run(["sst"], processed, path, PrepareConfig())
    assert path.read_text(encoding="utf-8") == "old\n"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
