"""experiments/table2_report.py: its verdicts are eval/verdict.py's rule on the seeds' interval."""
from __future__ import annotations

import json

from experiments import table2_report
from experiments.results.render import judge


def write(folder, task, variant, seed, values, iterations=900):
    run = folder / f"{task}-{variant}-{seed}"
    run.mkdir(parents=True)
    curve = [{"iteration": 300 * (i + 1), "headline": v} for i, v in enumerate(values)]
    (run / "curve.json").write_text(json.dumps({"task": task, "variant": variant, "iterations": iterations,
                                                "curve": curve}), encoding="utf-8")


def test_claims_use_the_one_verdict_rule(tmp_path):
    for seed, (s2s, satt) in enumerate([(60.0, 64.0), (61.0, 65.5), (59.5, 64.5)]):
        write(tmp_path, "srl", "s2s", seed, [s2s - 1, s2s, s2s])
        write(tmp_path, "srl", "satt", seed, [satt - 1, satt, satt])
        write(tmp_path, "schema", "satt", seed, [40.0, 45.0, 50.0])  # still rising: 5 points a third
        write(tmp_path, "schema", "catt", seed, [30.0, 31.0, 31.0])
    best, rising = table2_report.read_runs(tmp_path), table2_report.read_rising(tmp_path)
    assert table2_report.verdict(best, "srl", "satt", rising).endswith(": reproduced")
    assert table2_report.verdict(best, "schema", "catt", rising).endswith(
        ": not tested: a validation curve still rising over the last third of its budget")
    assert table2_report.verdict(best, "srl", "catt", rising) == "not run"
    assert table2_report.judge is judge  # the results pages' one rule, not a second copy
    floors = {"schema": 50.0}  # +SAtt reaches MWSC's floor, +CAtt lies wholly below it
    best[("schema", "satt")] = [48.0, 52.0, 47.0]
    assert table2_report.verdict(best, "schema", "catt", floors=floors).endswith(
        ": fails: a side's interval lies wholly below the 50.0 floor")
    best[("schema", "catt")] = [49.0, 53.0, 48.0]
    assert table2_report.verdict(best, "schema", "catt", floors=floors).endswith(
        ": not tested: a side's interval reaches the 50.0 floor")
