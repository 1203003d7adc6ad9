"""Issue 12's bad inputs, one by one (the fault bench's first cases): each builds its
bad input in the test's folder and calls the code a user's command would call, which must refuse it up front
with a DecaError naming the file, line or key (its message is the evidence). Three of them are faults (a
truncated checkpoint, other word vectors, a missing vector package)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from deca.errors import DecaError
from tests.faults.tools import FIXTURES, ROOT, case

CORPORA = FIXTURES / "corpora"
ORIGIN = "issue 12"


def read_all(task_name: str, split: str, files: list[Path]) -> int:
    from deca.registry import get_task

    task = get_task(task_name)
    return sum(1 for _ in task.read(split, files, task.make_options()))


def sst_unterminated_quote(tmp: Path):
    p = tmp / "train_binary_sent.csv"
    p.write_text('label,sentence\n1,"a fine film\n0,a dull film\n1,good\n', encoding="utf-8")
    return read_all("sst", "train", [p])


def sst_bad_utf8_line_5000(tmp: Path):
    p = tmp / "train_binary_sent.csv"
    lines = [b"label,sentence"] + [f"1,sentence {i}".encode() for i in range(1, 6000)]
    lines[4999] = b"0,bad \xff byte"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return read_all("sst", "train", [p])


def empty_split_file(task_name: str, tmp: Path):
    """The task's raw files copied from the miniature corpora, one of its split files emptied, then prepared."""
    from deca.config import PrepareConfig
    from deca.registry import get_task
    from pipelines import prepare

    task = get_task(task_name)
    for split in task.splits:
        for rel in task.splits[split]:
            (tmp / "raw" / rel).parent.mkdir(parents=True, exist_ok=True)
            src = CORPORA / rel
            shutil.copytree(src, tmp / "raw" / rel, dirs_exist_ok=True) if src.is_dir() else shutil.copy(
                src, tmp / "raw" / rel)
    split = "validation" if "validation" in task.splits else next(iter(task.splits))
    next(p for p in task.files(split, tmp / "raw") if p.is_file()).write_bytes(b"")
    job = prepare.make_job([task_name], tmp / "raw", tmp / "out", PrepareConfig(), from_mirror=True)
    return prepare.run(job, PrepareConfig())


def param(key: str, value, tmp: Path):
    from deca.checks import load_params

    return load_params(ROOT / "params.yaml", overrides={key: value})


def vocab_size_zero(tmp: Path):
    from deca.config import PrepareConfig
    from pipelines import vocab

    return vocab.run(["sst"], tmp, tmp / "v.txt", PrepareConfig(), size=0)


def truncated_checkpoint(tmp: Path):
    import torch

    from mqan.checkpoint import read_checkpoint

    torch.save({"format": "x", "weights": torch.zeros(1000)}, tmp / "m.pt")
    (tmp / "t.pt").write_bytes((tmp / "m.pt").read_bytes()[:200])
    return read_checkpoint(tmp / "t.pt")


def curriculum_longer_than_run(tmp: Path):
    from deca.config import TrainConfig
    from train.schedule import from_config

    return from_config(TrainConfig(strategy="anti_curriculum_squad", iterations=200), ["squad", "sst"])


def other_vector_source(tmp: Path):
    import numpy as np

    from deca.config import ModelConfig
    from mqan.checkpoint import load_checkpoint, save_checkpoint
    from mqan.model import build_model
    from mqan.vectors import VectorSource
    from mqan.vocab import Vocab

    vocab = Vocab.from_tokens([" a ", " b "], 10)
    cfg = ModelConfig(dimension=8, ff_hidden=8, heads=1, word_vectors=None, char_ngram_dim=4)
    a = VectorSource.from_arrays("v", ["a", "b"], np.eye(2))
    save_checkpoint(tmp / "m.pt", build_model(cfg, vocab, word_vectors=a))
    return load_checkpoint(tmp / "m.pt", vocab, word_vectors=VectorSource.from_arrays("v", ["a", "b"], np.ones((2, 2))))


def bad(name: str, build, group: str = "bad input") -> pytest.param:
    return case(group, name, ORIGIN, build)


CASES = [
    bad("SST CSV: unterminated quote swallows the next row", sst_unterminated_quote),
    bad("SST CSV: invalid UTF-8 on line 5000", sst_bad_utf8_line_5000),
    *(bad(f"0-byte split file: {t}", lambda tmp, t=t: empty_split_file(t, tmp))
      for t in ("srl", "zre", "multinli.in.out", "schema", "cnn_dailymail")),
    *(bad(f"param {k} = {v!r}", lambda tmp, k=k, v=v: param(k, v, tmp)) for k, v in (
        ("train.val_every", -1), ("train.save_every", -10), ("train.warmup", -1), ("train.checkpoints_to_keep", -1),
        ("model.dropout", 1.5), ("model.dimension", 0), ("train.lr", -0.1), ("train.iteratons", 5))),
    bad("deca prepare --vocab-size 0", vocab_size_zero),
    bad("curriculum first phase longer than the run", curriculum_longer_than_run),
    bad("truncated checkpoint", truncated_checkpoint, "fault"),
    bad("checkpoint loaded with other word vectors", other_vector_source, "fault"),
]


@pytest.mark.parametrize("build", CASES)
def test_a_bad_input_is_refused_up_front(build, tmp_path, observed):
    with pytest.raises(DecaError) as refused:
        build(tmp_path)
    observed(str(refused.value))


@pytest.mark.fault("fault", "vector source package not installed", ORIGIN)
def test_a_missing_vector_package_is_named(monkeypatch, observed):
    from mqan import vectors

    monkeypatch.setitem(vectors.PACKAGED, "glove-test-missing",
                        vectors.Packaged("no_such_module_xyz", "no-such-package", "m", "i"))
    with pytest.raises(DecaError) as refused:
        vectors.open_source("glove-test-missing")
    observed(str(refused.value))
