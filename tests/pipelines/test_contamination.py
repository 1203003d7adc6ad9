"""`deca contamination` (pipelines/contamination.py): planted duplicates are found in every field, disjoint
data gives no overlap, templates and labels are common (not overlap), the output is the same bytes on the
FnApiRunner and on the DaskRunner, a bad shard is an error naming it and leaves the output as it was."""
from __future__ import annotations

import json
from pathlib import Path

import dask
import pyarrow as pa
import pytest

from deca.config import PrepareConfig
from deca.errors import ConfigError, DataError
from deca.schema import EXAMPLE_SCHEMA
from pipelines import contamination as C
from pipelines.contamination_hashes import common_threshold
from pipelines.sinks import write_table

TASKS = ("sst", "schema")  # registered tasks with train and validation splits (checked: validation only)

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa "
         "quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()


def sentence(seed: int, length: int = 20) -> str:
    """A text of distinct made-up words (w<seed>_<i>): no 13-gram shared with any other seed."""
    return " ".join(f"{WORDS[(seed + i) % len(WORDS)]}{seed}x{i}" for i in range(length))


def row(task: str, split: str, ident: str, context: str, question: str, answer: str) -> dict:
    tok = lambda text: [f" {w} " for w in text.split()]  # revtok-like: whitespace marks around each token
    return {"id": ident, "task": task, "split": split, "context": context, "question": question, "answer": answer,
            "answers": [answer], "context_tokens": tok(context), "question_tokens": tok(question),
            "answer_tokens": tok(answer), "gold": None}


def write_split(root: Path, task: str, split: str, rows: list[dict], per_shard: int = 4) -> None:
    for k, start in enumerate(range(0, max(len(rows), 1), per_shard)):
        table = pa.Table.from_pylist(rows[start:start + per_shard], schema=EXAMPLE_SCHEMA)
        write_table(table, root / task / split / f"part-{k:05d}.parquet")


def corpus(root: Path, plant: bool = True) -> Path:
    """Two tasks: 30 training and 12 validation examples each, every text made of its own words, a template
    question per task, labels as answers; with `plant`, three validation examples of sst repeat training
    text: a context window of 13 words of a schema training context, a long question of an sst training
    example, and a long sst training answer."""
    seed = 0
    for t, task in enumerate(TASKS):
        template = f"is this {task} review negative or positive ?"
        train = []
        for i in range(30):
            seed += 1
            long_answer = i == 7 and task == "sst"
            train.append(row(task, "train", f"train-{i}", sentence(seed), template if i != 3 else sentence(seed + 500),
                             sentence(seed + 900) if long_answer else ("positive" if i % 2 else "negative")))
        write_split(root, task, "train", train)
        val = []
        for i in range(12):
            seed += 1
            val.append(row(task, "validation", f"dev-{i}", sentence(seed + 1000), template,
                           "negative" if i % 2 else "positive"))
        if plant and task == "sst":
            schema_context = sentence(30 + 12 + 1 + 5).split()  # schema's training example 5 (written next)
            val[2]["context_tokens"] = [f" {w} " for w in ["some", "new", "words"] + schema_context[4:17] + ["end"]]
            val[5]["question_tokens"] = train[3]["question_tokens"]  # a long (non-template) training question
            val[9]["answer_tokens"] = [t.upper() for t in train[7]["answer_tokens"]]  # case does not matter
        write_split(root, task, "validation", val)
    return root


def run(processed: Path, out: Path, beam_args=(), **kw) -> C.ContaminationResult:
    job = C.make_job(list(TASKS), processed, out, splits=["validation"], **kw)
    return C.run(job, PrepareConfig(), list(beam_args))


def test_every_planted_duplicate_is_found_in_its_field(tmp_path):
    out = tmp_path / "contamination"
    result = run(corpus(tmp_path / "processed"), out)
    ids = json.loads((out / C.IDS_FILE).read_text())["splits"]
    sst = ids["sst/validation"]
    assert sst["any"] == ["dev-2", "dev-5", "dev-9"]
    assert sst["by_field"] == {"context": ["dev-2"], "question": ["dev-5"], "answer": ["dev-9"],
                               "ngram": ["dev-2", "dev-5", "dev-9"]}
    assert sst["by_train_task"] == {"schema": {"context": ["dev-2"], "question": [], "answer": [], "any": ["dev-2"],
                                               "ngram": ["dev-2"]},
                                    "sst": {"context": [], "question": ["dev-5"], "answer": ["dev-9"],
                                            "any": ["dev-5", "dev-9"], "ngram": ["dev-5", "dev-9"]}}
    assert ids["schema/validation"]["any"] == []
    m = result.matrix["matrix"]
    assert m["sst/validation"]["train"]["sst"]["any"] == {"examples": 2, "share": round(2 / 12, 6)}
    assert m["sst/validation"]["train"]["schema"]["context"]["examples"] == 1
    assert m["sst/validation"]["flagged"] == 3 and m["schema/validation"]["flagged"] == 0
    # the template question and the labels are in every training example: common, not overlap
    assert m["sst/validation"]["train"]["sst"]["common_only"]["examples"] == 12 - 2
    assert m["schema/validation"]["train"]["sst"]["common_only"]["examples"] == 12  # the same labels, common in sst
    assert result.counters["examples"] == 2 * (30 + 12) and result.counters["overlapping_examples"] == 3
    assert json.loads((out / C.MATRIX_FILE).read_text()) == result.matrix
    assert C.load_flagged(out) == {"sst/validation": {"dev-2", "dev-5", "dev-9"}, "schema/validation": set()}


def test_disjoint_data_has_no_overlap(tmp_path):
    result = run(corpus(tmp_path / "processed", plant=False), tmp_path / "out")
    for r in result.matrix["matrix"].values():
        assert r["flagged"] == 0 and all(c[k]["examples"] == 0 for c in r["train"].values()
                                         for k in ("context", "question", "answer", "any", "ngram"))
    # with every text counting (no common texts), the template and the labels match
    strict = run(tmp_path / "processed", tmp_path / "strict", common_min=10_000, common_share=1.0)
    assert strict.matrix["matrix"]["sst/validation"]["by_field"] == {"context": 0, "question": 12, "answer": 12,
                                                                     "ngram": 0}


def parts_of(processed: Path, out: Path, build_and_run) -> dict[str, bytes]:
    """The per-split files the pipeline writes, built and run by `build_and_run(build)`."""
    job = C.make_job(list(TASKS), processed, out, splits=["validation"])
    examples = job.examples()
    thresholds = {t: common_threshold(examples[(t, "train")]) for t in job.train}
    out.mkdir()
    build_and_run(lambda p: C.build(p, job.shard_list(), thresholds, job.n, str(out)))
    return {f.name: f.read_bytes() for f in sorted(out.iterdir())}


def test_the_dask_translation_writes_what_the_local_runner_writes(tmp_path):
    """The DaskRunner's translation (pipelines/dask_bags.py) on Dask's synchronous scheduler: no cluster."""
    import apache_beam as beam
    from apache_beam.runners.dask.overrides import dask_overrides

    from pipelines import dask_bags

    processed = corpus(tmp_path / "processed")

    def local(build):
        p = beam.Pipeline(runner="FnApiRunner")
        build(p)
        p.run().wait_until_finish()

    def on_dask(build):
        p = beam.Pipeline(runner="BundleBasedDirectRunner")
        build(p)
        p.replace_all([dask_bags.LiftCombines(), *dask_overrides()])
        visitor = dask_bags.BagVisitor(3)
        p.visit(visitor)
        dask.compute(visitor.final(), scheduler="sync")

    one, two = parts_of(processed, tmp_path / "local", local), parts_of(processed, tmp_path / "dask", on_dask)
    assert one == two and "sst@validation.json" in one


@pytest.mark.slow
def test_the_output_is_the_same_bytes_on_a_dask_cluster(tmp_path):
    processed = corpus(tmp_path / "processed")
    local = run(processed, tmp_path / "local")
    on_dask = run(processed, tmp_path / "dask", ["--runner=DaskRunner", "--dask_local_workers=2"])
    for name in (C.MATRIX_FILE, C.IDS_FILE):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "dask" / name).read_bytes()
    assert on_dask.counters == local.counters


def test_a_bad_shard_is_an_error_naming_it_and_the_output_stays(tmp_path):
    processed = corpus(tmp_path / "processed")
    out = tmp_path / "out"
    run(processed, out)
    before = (out / C.MATRIX_FILE).read_bytes()
    bad = processed / "schema" / "train" / "part-00001.parquet"
    bad.write_bytes(b"PAR1 not parquet")
    with pytest.raises(DataError) as err:
        run(processed, out)
    assert str(bad) in str(err.value)
    assert (out / C.MATRIX_FILE).read_bytes() == before and sorted(p.name for p in out.iterdir()) == [C.IDS_FILE,
                                                                                                  C.MATRIX_FILE]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_missing_split_and_bad_settings_are_clear_errors(tmp_path):
    with pytest.raises(DataError, match="no processed Parquet shards for task 'sst' split 'train'"):
        run(tmp_path / "nothing", tmp_path / "out")
    with pytest.raises(ConfigError, match="--ngram"):
        C.make_job(list(TASKS), tmp_path, tmp_path / "out", n=0)
    with pytest.raises(ConfigError, match="evaluation split"):
        C.make_job(list(TASKS), tmp_path, tmp_path / "out", splits=["train"])


# ---- the output is what the first implementation wrote (one Beam element per hash, commit 0dd82dc) -----

EXPECTED = Path(__file__).resolve().parents[1] / "fixtures" / "contamination_expected"
MIXED_TASKS = ("sst", "schema", "woz.en")


def mixed_corpus(root: Path) -> Path:
    """Three tasks with train, validation and test splits of random texts over a small vocabulary: empty,
    short and long texts, labels and a template (common), and evaluation texts that copy slices of training
    texts of any task (some upper-cased, some with a word changed), so that every kind of match happens.
    Seeded: the same files every time."""
    import random

    rng = random.Random(36)
    vocab = [f"v{i}" for i in range(40)]
    train_texts: list[list[str]] = []

    def text(copy: bool) -> list[str]:
        if copy and train_texts and rng.random() < 0.6:
            src = rng.choice(train_texts)
            if rng.random() < 0.3:
                return src
            start = rng.randrange(max(len(src) - 12, 1))
            words = src[start:start + rng.choice([2, 13, 14, 30])]
            if words and rng.random() < 0.2:
                words = words[:]
                words[rng.randrange(len(words))] = "changed"
            return [w.upper() if rng.random() < 0.1 else w for w in words]
        return rng.choices(vocab, k=rng.choice([0, 1, 3, 12, 13, 14, 25, 40]))

    for task in MIXED_TASKS:
        template = f"what is the {task} label ?".split()
        for split, count in (("train", 50), ("validation", 14), ("test", 9)):
            rows = []
            for i in range(count):
                question = template if rng.random() < 0.7 else text(split != "train")
                answer = [rng.choice(["yes", "no"])] if rng.random() < 0.5 else text(split != "train")
                context = text(split != "train")
                if split == "train":
                    train_texts.extend([context, question, answer])
                r = row(task, split, f"{split}-{i}", "c", "q", "a")
                r.update(context_tokens=[f" {w} " for w in context], question_tokens=[f" {w} " for w in question],
                         answer_tokens=[f"{w} " for w in answer])
                rows.append(r)
            write_split(root, task, split, rows, per_shard=rng.choice([3, 7, 50]))
    return root


def run_mixed(processed: Path, out: Path, **kw) -> C.ContaminationResult:
    job = C.make_job(list(MIXED_TASKS), processed, out, common_min=3, common_share=0.05, **kw)
    return C.run(job, PrepareConfig())


def test_the_output_is_the_bytes_of_the_first_implementation(tmp_path):
    """tests/fixtures/contamination_expected holds what the first implementation (one element per hash)
    wrote for `mixed_corpus`; batching by hash bucket must not change a byte."""
    import apache_beam as beam

    out = tmp_path / "out"
    result = run_mixed(mixed_corpus(tmp_path / "processed"), out)
    for name in (C.MATRIX_FILE, C.IDS_FILE):
        assert (out / name).read_bytes() == (EXPECTED / name).read_bytes(), name
    assert result.counters == json.loads((EXPECTED / "counters.json").read_text())
    ids = json.loads((out / C.IDS_FILE).read_text())["splits"]
    assert sum(len(v["any"]) for v in ids.values()) > 10  # the fixture does match
    # the bucketing does not change what is found: one bucket, or many
    job = C.make_job(list(MIXED_TASKS), tmp_path / "processed", out, common_min=3, common_share=0.05)
    examples = job.examples()
    thresholds = {t: common_threshold(examples[(t, "train")], 0.05, 3) for t in job.train}
    parts = {}
    for buckets in (1, 1024):
        parts[buckets] = tmp_path / f"parts{buckets}"
        parts[buckets].mkdir()
        p = beam.Pipeline(runner="FnApiRunner")
        C.build(p, job.shard_list(), thresholds, job.n, str(parts[buckets]), buckets=buckets)
        p.run().wait_until_finish()
    assert [f.read_bytes() for f in sorted(parts[1].iterdir())] == [f.read_bytes() for f in sorted(parts[1024].iterdir())]
    with pytest.raises(ConfigError, match="power of two"):
        C.build(None, [], {}, 13, str(tmp_path), buckets=48)


def test_the_command_line(tmp_path, capsys):
    from deca.cli import main

    processed = corpus(tmp_path / "processed")
    assert main(["contamination", "--tasks", *TASKS, "--splits", "validation", "--processed", str(processed),
                 "--out", str(tmp_path / "out")]) == 0
    assert "sst/validation" in capsys.readouterr().out
    assert C.load_flagged(tmp_path / "out")["sst/validation"] == {"dev-2", "dev-5", "dev-9"}
