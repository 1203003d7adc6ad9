"""The metric registry: names, directions, suites, and every task's headline being a known metric."""
from __future__ import annotations

import subprocess
import sys

import pytest

from deca.registry import DECANLP, all_tasks
from eval.metrics.registry import DECASCORE, FAMILIES, METRICS, compute, get_metric, suite
from tests.conftest import ROOT

HEADLINES = {"squad": "nf1", "iwslt.en.de": "bleu", "cnn_dailymail": "rouge", "multinli.in.out": "em",
             "sst": "em", "srl": "nf1", "zre": "corpus_f1", "woz.en": "joint_goal_em", "wikisql": "lfem",
             "schema": "em"}


def test_every_registered_tasks_headline_is_a_registered_metric():
    for name, task in all_tasks().items():
        metric = get_metric(task.metric)
        assert metric.higher_is_better, name


def test_decanlp_headlines_as_in_the_reference():
    tasks = all_tasks()
    for name in DECANLP:
        if name in tasks:
            assert tasks[name].metric == HEADLINES[name]


def test_decascore_is_declared_over_the_ten_tasks():
    assert DECASCORE.tasks == tuple(DECANLP) and len(DECASCORE.tasks) == 10
    assert DECASCORE.maximum == 1000.0


def test_unknown_metric_lists_known_ones():
    with pytest.raises(KeyError, match="nf1"):
        get_metric("accuracy")


def test_suites_always_include_the_squad_family():
    assert suite("nf1") == ("squad",)
    assert suite("rouge") == ("squad", "rouge")
    assert set(FAMILIES) == {"squad", "bleu", "rouge", "zre", "woz", "wikisql"}
    assert {m.family for m in METRICS.values()} == set(FAMILIES)


def test_the_registry_imported_alone_holds_every_family():
    # In a fresh process: in this one, other imports may have registered the families already.
    code = ("from eval.metrics.registry import FAMILIES, get_metric; "
            "print(*sorted(FAMILIES), get_metric('lfem').family)")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["bleu", "rouge", "squad", "wikisql", "woz", "zre", "wikisql"]


def test_compute_returns_the_headline_first():
    rows = [{"id": "1", "answer": "paris", "answers": ["paris"], "gold": None}]
    out = compute("corpus_f1", ["paris"], rows)
    assert list(out)[0] == "corpus_f1"
    assert set(out) == {"corpus_f1", "precision", "recall", "em", "nem", "nf1"}
