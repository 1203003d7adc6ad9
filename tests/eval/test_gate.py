"""The promotion gate's rule (eval/gate.py) on synthetic `deca evaluate` predictions records."""
from __future__ import annotations

import numpy as np
import pytest

from deca.errors import ConfigError, DataError
from eval.gate import evidence, margin_of, refusal
from tests.eval.test_paired import write_run

N = 1000
TASKS = ("sst", "multinli.in.out")


def holder_correct(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).random(N) < 0.75


def changed(correct: np.ndarray, fixes: int, breaks: int, seed: int) -> np.ndarray:
    """`correct` with `fixes` wrong examples made right and `breaks` right ones made wrong, chosen at random."""
    rng = np.random.default_rng(seed)
    out = correct.copy()
    out[rng.choice(np.flatnonzero(~correct), fixes, replace=False)] = True
    out[rng.choice(np.flatnonzero(correct), breaks, replace=False)] = False
    return out


def write(folder, per_task: dict[str, np.ndarray]):
    for task, correct in per_task.items():
        write_run(folder, task, correct, ["positive" if i % 3 else "negative" for i in range(N)])
    return folder


@pytest.fixture
def holder(tmp_path):
    correct = {t: holder_correct(k) for k, t in enumerate(TASKS)}
    return write(tmp_path / "holder", correct), correct


def test_the_champion_plus_noise_is_refused(holder, tmp_path):
    folder, correct = holder
    noisy = write(tmp_path / "noisy", {t: changed(c, 30, 30, seed=9) for t, c in correct.items()})
    found = evidence([noisy], [folder], {"default": 3.0}, replicates=400)
    assert not found["accepted"]
    line = refusal(found)
    assert line.startswith("decaScore: candidate - holder = +0.00 [95% -") and line.endswith("lower bound not above 0")
    assert "\n" not in line
    # with 1-point margins the noise also reaches below the tasks' margins: named first, on the same line
    line = refusal(evidence([noisy], [folder], {"default": 1.0}, replicates=400))
    assert line.startswith("task MNLI (multinli.in.out): ") and "; decaScore: " in line


def test_a_clearly_better_candidate_is_accepted(holder, tmp_path):
    folder, correct = holder
    better = write(tmp_path / "better", {t: changed(c, 80, 5, seed=3) for t, c in correct.items()})
    found = evidence([better], [folder], {"default": 1.0}, replicates=400)
    assert found["accepted"] and found["reasons"] == []
    assert found["rows"]["decascore"]["diff"]["low"] > 0
    assert found["rows"]["sst"]["margin"] == 1.0 and found["rows"]["sst"]["diff"]["value"] == pytest.approx(7.5)


def test_a_candidate_worse_on_one_task_beyond_its_margin_is_refused_though_the_decascore_rises(holder, tmp_path):
    folder, correct = holder
    mixed = write(tmp_path / "mixed", {"sst": changed(correct["sst"], 150, 0, seed=4),
                                       "multinli.in.out": changed(correct["multinli.in.out"], 0, 40, seed=5)})
    found = evidence([mixed], [folder], {"default": 1.0}, replicates=400)
    score = found["rows"]["decascore"]["diff"]
    assert score["value"] == pytest.approx(11.0) and score["low"] > 0  # the decaScore really rises
    assert not found["accepted"]
    line = refusal(found)
    assert line.startswith("task MNLI (multinli.in.out): candidate - holder = -4.00 [95% ")
    assert line.endswith("lower bound below its non-inferiority margin -1") and "decaScore" not in line
    # a margin wide enough for that loss lets it through
    assert evidence([mixed], [folder], {"default": 1.0, "multinli.in.out": 8.0}, replicates=400)["accepted"]


def test_margins_unknown_tasks_and_other_tasks_are_refused(holder, tmp_path):
    folder, correct = holder
    assert margin_of("sst", {"sst": 2}) == 2.0 and margin_of("sst", {"default": 0.5}) == 0.5
    assert margin_of("sst", {}) == 1.0
    with pytest.raises(ConfigError, match="register.margins: unknown task"):
        evidence([folder], [folder], {"sstt": 1.0})
    one = write(tmp_path / "one", {"sst": correct["sst"]})
    with pytest.raises(DataError, match="other tasks"):
        evidence([one], [folder], {})
