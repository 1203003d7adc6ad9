"""experiments/table3.py: the table of the strategies and its verdicts against the paper's Table 3."""
from __future__ import annotations

import pytest

from experiments import table3


def run(strategy: str, seed: int, squad: float, rest: float, curves: dict | None = None) -> dict:
    scores = {"squad_dev": squad, **{t: rest for t in table3.TASKS[1:]}}
    return {"strategy": strategy, "seed": seed, "scores": scores, "curves": curves or {}}


def test_verdicts_come_from_the_interval_of_the_change():
    """Two seeds a side: a +9.5 change with a Welch interval of [-4.7, +23.7] is inconclusive."""
    runs = {"fj1": run("fully_joint", 123, 30.0, 50.0), "fj2": run("fully_joint", 7, 32.0, 50.0),
            "ac1": run("anti_curriculum", 123, 40.0, 49.0), "ac2": run("anti_curriculum", 7, 41.0, 49.5),
            "cu1": run("curriculum", 123, 31.0, 50.0), "cu2": run("curriculum", 7, 29.0, 51.0)}
    lines = "\n".join(table3.table(runs))
    assert "| fully_joint | 123, 7 | 31.0 ± 1.4 |" in lines
    assert "| SQuAD first raises SQuAD | +3.5 | +9.5 [-4.7, +23.7] | inconclusive: 2 seeds a side |" in lines
    assert "| the curriculum lowers SQuAD | -27.4 | -1.0 [-7.1, +5.1] | inconclusive: 2 seeds a side |" in lines


def test_three_seeds_reproduce_and_opposite_and_a_rising_curve_is_not_tested():
    runs = {f"fj{s}": run("fully_joint", s, 30.0 + s, 50.0) for s in range(3)}
    runs.update({f"ac{s}": run("anti_curriculum", s, 40.0 + s, 50.0) for s in range(3)})
    runs.update({f"cu{s}": run("curriculum", s, 40.0 + s, 50.0) for s in range(3)})
    lines = "\n".join(table3.table(runs))
    assert "| SQuAD first raises SQuAD | +3.5 | +10.0 [+7.7, +12.3] | reproduced |" in lines
    assert "| the curriculum lowers SQuAD | -27.4 | +10.0 [+7.7, +12.3] | opposite |" in lines
    rising = [(0, 5.0), (600, 20.0), (800, 30.0), (900, 40.0)]
    runs["ac0"] = run("anti_curriculum", 0, 40.0, 50.0, curves={"squad_dev": rising})
    assert ("| SQuAD first raises SQuAD | +3.5 | +10.0 [+7.7, +12.3] | not tested: a validation curve still rising over "
            "the last third of its budget |") in "\n".join(table3.table(runs))


def test_one_seed_and_missing_strategies_are_said():
    lines = "\n".join(table3.table({"fj": run("fully_joint", 123, 30.0, 50.0),
                                    "ac": run("anti_curriculum", 123, 20.0, 50.0)}))
    assert "| SQuAD first raises SQuAD | +3.5 | -10.0 | inconclusive: 1 seed a side |" in lines
    assert "| the curriculum (easy tasks first) lowers the sum | | not run | |" in lines


def test_report_without_runs_says_what_to_do(tmp_path):
    with pytest.raises(SystemExit, match="run `table3.py run` first"):
        table3.read_runs(tmp_path)
