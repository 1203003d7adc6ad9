"""bench/record.py and the figures the benches of docs/results/scale.md put in their records."""
from __future__ import annotations

import json

import pytest

from bench import metrics, prepare, ray_scaling, record
from experiments.results import records


def test_a_record_holds_the_command_commit_machine_load_settings_and_figures(tmp_path):
    started = record.begin("bench.prepare", ["--repeat", "3", "--record", "a b.json"])
    written = record.write(tmp_path / "scale" / "prepare.json", started, {"repeat": 3}, {"runs": {"plain": [1.0]}})
    assert json.loads((tmp_path / "scale" / "prepare.json").read_text()) == written
    assert written["command"] == "python -m bench.prepare --repeat 3 --record 'a b.json'"
    assert set(written["machine"]) == {"cpu", "cores", "bf16_units", "gpu", "units"}
    assert len(written["load_before"]) == len(written["load_after"]) == 3
    assert written["settings"] == {"repeat": 3} and written["runs"] == {"plain": [1.0]}


def test_this_machine_names_its_cpu_cores_and_bf16_units():
    found = record.this_machine()
    assert set(records.MACHINE_FIELDS) <= set(found) and found["cores"] >= 1
    assert isinstance(found["bf16_units"], bool)
    assert set(found["units"]) <= set(record.UNIT_FLAGS)
    assert found["bf16_units"] == bool({"avx512_bf16", "amx_bf16"} & set(found["units"]))


def test_a_figure_named_like_a_record_field_is_refused(tmp_path):
    with pytest.raises(ValueError, match="commit"):
        record.write(tmp_path / "r.json", record.begin("bench.x", []), {}, {"commit": "abc"})


def test_prepare_ratios_are_examples_per_second_of_the_best_runs():
    best = {"plain": {"examples": 100, "seconds": 4.0}, "plain-cached": {"examples": 100, "seconds": 2.0},
            "beam-mp2": {"examples": 100, "seconds": 2.5}}
    assert prepare.ratios(best) == {"plain-cached/plain": 2.0, "beam-mp2/plain": 1.6, "beam-mp2/plain-cached": 0.8}


def test_the_parquet_digest_sees_names_and_bytes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "part-0.parquet").write_bytes(b"x")
    first = prepare.parquet_digest(tmp_path)
    (tmp_path / "a" / "part-0.parquet").write_bytes(b"y")
    second = prepare.parquet_digest(tmp_path)
    (tmp_path / "a" / "part-0.parquet").rename(tmp_path / "a" / "part-1.parquet")
    assert len({first, second, prepare.parquet_digest(tmp_path)}) == 3


def test_the_metric_suite_total_sums_each_sets_best_time_and_skips_missing_sets():
    rows = [{"examples": 10, "seconds": [0.5, 0.3]}, {"examples": 5, "seconds": [0.2]}, {"skipped": "no file"}]
    assert metrics.suite_total(rows) == (15, pytest.approx(0.5))


def test_ray_ratios():
    results = {"plain loop, 1 thread": {"tokens_per_s": 100.0}, "plain loop, 2 threads": {"tokens_per_s": 150.0},
               "ray, 1 worker": {"tokens_per_s": 80.0}, "ray, 2 workers": {"tokens_per_s": 120.0}}
    found = ray_scaling.ratios(results)
    assert found["time_per_token_ray1_vs_plain1"] == 1.25
    assert found["ray2_vs_ray1"] == 1.5 and found["plain2_vs_plain1"] == 1.5
    assert found["ray2_vs_best_plain"] == 0.8 and found["ray, 2 workers vs plain loop, 1 thread"] == 1.2
