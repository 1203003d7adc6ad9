"""experiments/table3.py: the table of the strategies and its verdicts against the paper's Table 3."""
from __future__ import annotations

import sys

import pytest

from tests.conftest import ROOT

sys.path.insert(0, str(ROOT / "experiments"))
import table3  # noqa: E402


def run(strategy: str, seed: int, squad: float, rest: float) -> dict:
    scores = {"squad_dev": squad, **{t: rest for t in table3.TASKS[1:]}}
    return {"strategy": strategy, "seed": seed, "scores": scores, "curves": {}}


def test_verdicts_need_a_change_larger_than_the_seed_spread():
    runs = {"fj1": run("fully_joint", 123, 30.0, 50.0), "fj2": run("fully_joint", 7, 32.0, 50.0),
            "ac1": run("anti_curriculum", 123, 40.0, 49.0), "ac2": run("anti_curriculum", 7, 41.0, 49.5),
            "cu1": run("curriculum", 123, 31.0, 50.0), "cu2": run("curriculum", 7, 29.0, 51.0)}
    lines = "\n".join(table3.table(runs))
    assert "| fully_joint | 123, 7 | 31.0 ± 1.4 |" in lines
    assert "| SQuAD first raises SQuAD | +3.5 | +9.5 | reproduced |" in lines
    # the sum: anti 40.5 + 4 x 49.25 = 237.5 against 31 + 200 = 231: +6.5, larger than the spread
    assert "| SQuAD first beats fully joint (sum of the 5) | +8.6 | +6.5 | reproduced |" in lines
    assert "| the curriculum lowers SQuAD | -27.4 | -1.0 | within the seed spread (1.4) |" in lines


def test_one_seed_and_missing_strategies_are_said():
    lines = "\n".join(table3.table({"fj": run("fully_joint", 123, 30.0, 50.0),
                                    "ac": run("anti_curriculum", 123, 20.0, 50.0)}))
    assert "| SQuAD first raises SQuAD | +3.5 | -10.0 | one seed |" in lines
    assert "| the curriculum (easy tasks first) lowers the sum | | not run | |" in lines


def test_report_without_runs_says_what_to_do(tmp_path):
    with pytest.raises(SystemExit, match="run `table3.py run` first"):
        table3.read_runs(tmp_path)
