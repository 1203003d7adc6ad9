"""The promotion gate's rule (eval/gate.py) on synthetic `deca evaluate` predictions records."""
from __future__ import annotations

import numpy as np
import pytest

from tests.support import write_run
from deca.config import RegisterConfig
from deca.errors import ConfigError, DataError
from eval.gate import ACCEPT, evidence, margin_of, refusal
from eval.stats import MAX_REPLICATES, MIN_REPLICATES

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


ZERO_SHOT = ("snli", "amazon")  # registered tasks outside the decaScore


def test_a_tie_outside_the_decascore_is_refused_in_one_line(tmp_path):
    """Issue 42: identical models evaluated only on zero-shot tasks were accepted on +0.00."""
    same = write(tmp_path / "same", {t: holder_correct(k) for k, t in enumerate(ZERO_SHOT)})
    with pytest.raises(DataError) as refused:
        evidence([same], [same], {"default": 1.0}, replicates=200)
    line = str(refused.value)
    assert line.startswith(f"{same}: no task the gate can judge: both sides were evaluated only on amazon, snli, "
                           "outside the decaScore") and "register.accept: non_inferior" in line
    assert "\n" not in line
    # non-inferiority judges any task, and promotes a tie, only where params ask for it by name
    found = evidence([same], [same], {"default": 1.0}, replicates=200, accept="non_inferior")
    assert found["accepted"] and found["accept"] == "non_inferior" and "a tie promotes" in found["rule"]


def test_a_tie_never_promotes_by_default(holder):
    folder, _ = holder
    found = evidence([folder], [folder], {"default": 1.0}, replicates=200)
    assert found["rows"]["decascore"]["diff"] == {"value": 0.0, "low": 0.0, "high": 0.0}
    assert not found["accepted"] and found["accept"] == "superior"
    assert refusal(found) == "decaScore: candidate - holder = +0.00 [95% +0.00, +0.00], lower bound not above 0"
    assert evidence([folder], [folder], {"default": 1.0}, replicates=200, accept="non_inferior")["accepted"]


@pytest.mark.parametrize("replicates", [0, 1, MIN_REPLICATES - 1, MAX_REPLICATES + 1])
def test_replicates_out_of_bounds_are_one_config_error(holder, replicates, monkeypatch):
    """Issue 42: 0 ended in a traceback, 1 quoted a "95% interval" of one resample."""
    folder, _ = holder
    monkeypatch.setattr("eval.gate.paired", lambda *a, **k: pytest.fail("resampled before the check"))
    with pytest.raises(ConfigError, match=rf"^register.replicates = {replicates}: must be between "
                                          rf"{MIN_REPLICATES} .* and {MAX_REPLICATES:,} "):
        evidence([folder], [folder], {"default": 1.0}, replicates=replicates)


def test_accept_names_one_of_the_rules(holder):
    folder, _ = holder
    assert ACCEPT == ("superior", "non_inferior") and RegisterConfig().accept == ACCEPT[0]
    with pytest.raises(ConfigError, match=r"^register.accept = 'non-inferior': must be one of superior, "
                                          r"non_inferior \(did you mean 'non_inferior'\?\)$"):
        evidence([folder], [folder], {"default": 1.0}, replicates=200, accept="non-inferior")
