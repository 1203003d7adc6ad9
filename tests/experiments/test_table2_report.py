"""experiments/table2_report.py: its verdicts are eval/verdict.py's rule on the seeds' interval."""
from __future__ import annotations

import json

from experiments import table2_report


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
    assert table2_report.verdict(best, "schema", "catt", rising).endswith(": not tested")
    assert table2_report.verdict(best, "srl", "catt", rising) == "not run"
    assert table2_report.judge([60.0], [64.0], +4.3) == "inconclusive (one seed)"
    assert table2_report.judge([60.0, 61.0, 59.5], [64.0, 65.5, 64.5], -4.3) == "opposite"
    floors = {"schema": 50.0}  # MWSC below its random-candidate floor
    assert table2_report.judge([48.0, 52.0, 47.0], [40.0, 41.0, 39.0], -5.9, floor=floors["schema"]) == "not tested"
