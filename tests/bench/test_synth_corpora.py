"""bench/synth_corpora.py: the synthetic corpora are read by the project's own task readers, in the sizes
asked for, with SQuAD answers that are spans of their contexts; the same seed gives the same bytes."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from bench import synth_corpora as synth
from deca.registry import Dropped, get_task

FRACTION = 0.0005


@pytest.fixture(scope="module")
def mirror(tmp_path_factory, shared_corpora) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("synthetic")
    return out, synth.write_all(out, FRACTION, seed=3)


def digest(root: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        h.update(str(path.relative_to(root)).encode() + path.read_bytes())
    return h.hexdigest()


def test_every_split_reads_back_in_the_size_asked(mirror):
    out, written = mirror
    for corpus, splits in synth.SIZES.items():
        task = get_task(synth.TASKS[corpus])
        for split, full in splits.items():
            items = list(task.read(split, task.files(split, out), task.make_options()))
            assert written[corpus][split] == synth.count(full, FRACTION)
            assert len(items) == written[corpus][split], (corpus, split)
            kept = [i for i in items if not isinstance(i, Dropped)]
            assert kept and all(i.context and i.question and i.answer for i in kept)


def test_squad_answers_are_spans_and_generation_is_deterministic(mirror, tmp_path):
    out, _ = mirror
    data = json.loads((out / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))
    assert data["version"] == "1.1"
    qas = [(p["context"], qa) for a in data["data"] for p in a["paragraphs"] for qa in p["qas"]]
    assert any(len(qa["answers"]) > 1 for _, qa in qas)  # dev questions have several gold answers
    for context, qa in qas:
        for answer in qa["answers"]:
            start = answer["answer_start"]
            assert context[start:start + len(answer["text"])] == answer["text"]
    synth.write_all(tmp_path / "again", FRACTION, seed=3)
    assert digest(tmp_path / "again") == digest(out)
