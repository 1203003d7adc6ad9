"""experiments/results/gpu.py: the figures of docs/results/gpu.md's prose are computed from the bench rows,
the SST curve and table2.json's H200 runs."""
from __future__ import annotations

import copy

import pytest

from experiments.results import gpu, records


def row(config, phase, speed, memory, s_per_step=0.1, rate=100.0, tflops=None):
    return {"configuration": config, "phase": phase, "examples_per_batch": 256.0, "ctx_mean": None,
            "s_per_step": s_per_step, "examples_per_s": rate, "peak_gb": 1.0, "tflops": tflops, "mfu_pct": None,
            "speed_vs_fp32": speed, "memory_vs_fp32": memory}


def record_of(small_rows, large_rows):
    settings = {"decode_batch": 256, "decode_steps": 50, "steps": 20}
    return {"peak_tflops_bf16": 989, "peak_tflops_fp32": 67, "runs": [
        {"rows": small_rows, "settings": {**settings, "budget": 10000}},
        {"rows": large_rows, "settings": {**settings, "decode_batch": 2048, "budget": 80000}}]}


def test_bf16_ranges_gains_and_counts_come_from_the_rows():
    small = [row("fp32", "train step, squad", 1.0, 1.0, rate=100.0), row("fp32", "train step, sst", 1.0, 1.0, rate=50.0, tflops=6.7),
             row("bf16", "train step, squad", 1.10, 1.02, s_per_step=0.3, tflops=4.945),
             row("bf16", "greedy, sst dev", 0.60, 0.90)]
    large = [row("fp32", "train step, squad", 1.0, 1.0, rate=450.0), row("fp32", "train step, sst", 1.0, 1.0, rate=100.0),
             row("bf16", "train step, sst", 0.95, 0.70), row("bf16", "greedy, sst dev", 0.80, 0.75)]
    found = gpu.bench_values(record_of(small, large))
    assert (found["speed_low"], found["speed_high"]) == ("0.60", "1.10")
    assert (found["mem_train_low"], found["mem_train_high"]) == ("0.70", "1.02")
    assert (found["mem_decode_low"], found["mem_decode_high"]) == ("0.75", "0.90")
    assert found["mem_train_saving"] == "30" and found["mfu_max_bf16"] == "0.50"
    assert found["mfu_max_fp32"] == "10.00"  # 6.7 TFLOP/s against the fp32 peak (67), not the bf16 one
    assert (found["smaller_rows"], found["bf16_rows"]) == ("3", "4")
    assert (found["squad_gain"], found["sst_gain"], found["budget_factor"]) == ("4.5", "2.0", "8")
    # s/step from examples per batch (256) over examples/s, for the rows measured at both budgets
    assert (found["step_small_low"], found["step_small_high"]) == ("2.560", "5.120")
    assert (found["step_large_low"], found["step_large_high"]) == ("0.569", "2.560")
    assert (found["step_ratio_low"], found["step_ratio_high"]) == ("0.2", "0.5")
    assert "| train step, squad | fp32 | 2.560 | 0.569 | x0.22 |" in found["step_table"]
    # the fp32 sentence's span leaves out bf16's rows (here bf16's sst row has no 10,000-token counterpart)
    assert (found["step_ratio_fp32_low"], found["step_ratio_fp32_high"]) == ("0.2", "0.5")
    assert "bf16" not in found["step_table"]  # bf16's squad row has no 80,000-token counterpart here
    assert (found["decode_speed_small_low"], found["decode_speed_large_high"]) == ("0.60", "0.80")


def test_the_best_moving_average_is_its_first_iteration_at_the_highest_value():
    curve = [{"iteration": i, "em_moving_average": ma} for i, ma in ((200, 50.0), (400, 80.5), (600, 80.5), (800, 79.0))]
    assert gpu.best_moving_average(curve)["iteration"] == 400


def test_a_column_the_run_did_not_keep_is_left_out_of_its_table():
    text = gpu.bench_table(record_of([], []), {"rows": [row("fp32", "greedy, sst dev", 1.0, 1.0)]})
    assert "ctx mean" not in text and "TFLOP/s" not in text and "| x1.00 |" in text


def test_the_grid_shows_minutes_only_where_table2_holds_them():
    table2 = copy.deepcopy(records.load("table2"))
    assert "not recorded" in gpu.grid_values(table2)["grid_table"]
    for r in table2["runs"] + [r for t in table2.get("replaced", {}).values() for r in t["runs"]]:
        if r["machine"] == "h200" and r["task"] == "woz.en":
            r["minutes"] = 4.0 if r["seed"] == 7 else 5.5
    assert "| 8 | WOZ | 1,800 (validation every 150) | 7, 123 | 4.0-5.5 |" in gpu.grid_values(table2)["grid_table"]


def test_runs_replaced_in_table2_stay_on_the_gpu_page_with_why():
    """The H200's WOZ runs, replaced in Table 2 by runs that kept curves and per-example records, are still the
    GPU grid's: the page lists them and says why they left Table 2."""
    table2 = copy.deepcopy(records.load("table2"))
    if "woz.en" not in table2.get("replaced", {}):
        gone = [r for r in table2["runs"] if r["machine"] == "h200" and r["task"] == "woz.en"]
        table2["runs"] = [r for r in table2["runs"] if r not in gone]
        table2["replaced"] = {"woz.en": {"runs": gone, "why": "Replaced in Table 2 by the xeon runs."}}
    found = gpu.grid_values(table2)
    assert "| 8 | WOZ | 1,800 (validation every 150) | 7, 123 |" in found["grid_table"]
    why = table2["replaced"]["woz.en"]["why"]
    assert found["grid_replaced"] == f"\n\n{why}" and "table2_woz.png" in records.load("table2")["replaced"]["woz.en"]["why"]


def test_the_gpu_seed_is_set_beside_the_cpu_spread_without_a_verdict():
    found = gpu.values()
    spread_mean = float(found["cpu_spread"].split(" ± ")[0])
    assert float(found["gap"]) == pytest.approx(float(found["best_ma"]) - spread_mean, abs=0.11)
    page = (records.ROOT / gpu.PAGE).read_text(encoding="utf-8")
    assert "one seed" in page and not any(w in page for w in ("within the", "reproduced", "below the CPU"))


def test_each_rows_mfu_is_against_its_own_precisions_peak():
    record = records.load("gpu")
    for run in record["runs"]:
        for r in run["rows"]:
            if r["tflops"] is not None:
                peak = {"bf16": record["peak_tflops_bf16"], "fp32": record["peak_tflops_fp32"]}[r["configuration"]]
                assert gpu.mfu(record, r) == 100 * r["tflops"] / peak


def test_the_sst_runs_best_is_of_the_kept_rows_and_overfitting_is_read_from_them():
    sst = copy.deepcopy(records.load("gpu")["sst"])
    found = gpu.sst_values(sst)
    assert (found["kept_rows"], found["logged_rows"]) == ("8", "16")  # every 200 iterations to 3,193, and the last
    assert found["overfits"] == "the model overfits"
    sst["curve"][-1]["em_moving_average"] = 81.0  # the last row above the earlier best: nothing to call overfitting
    assert gpu.sst_values(sst)["overfits"].startswith("the best kept row is the last")
    sst["curve"][-1]["em_moving_average"], sst["curve"][-1]["train_loss"] = 77.5, 0.2  # loss rose too
    assert gpu.sst_values(sst)["overfits"] == "the kept rows show no overfitting"


def test_the_fp32_step_ratio_leaves_out_the_bf16_rows():
    small = [row("fp32", "train step, sst", 1.0, 1.0, rate=100.0), row("bf16", "train step, sst", 1.0, 1.0, rate=100.0)]
    large = [row("fp32", "train step, sst", 1.0, 1.0, rate=200.0), row("bf16", "train step, sst", 1.0, 1.0, rate=20.0)]
    found = gpu.step_values(record_of(small, large))
    assert (found["step_ratio_low"], found["step_ratio_high"]) == ("0.5", "5.0")  # every row
    assert (found["step_ratio_fp32_low"], found["step_ratio_fp32_high"]) == ("0.5", "0.5")


def test_bf16_rows_at_or_above_fp32_are_counted_with_their_range_and_runs():
    small = [row("bf16", "train step, squad", 1.02, 1.0), row("bf16", "greedy, sst dev", 0.62, 1.0)]
    large = [row("bf16", "train step, sst", 1.06, 1.0), row("bf16", "greedy, squad dev", 1.0, 1.0)]
    record = record_of(small, large)
    record["runs"][0]["settings"]["steps"], record["runs"][1]["settings"]["steps"] = 20, 10
    assert gpu.faster_said(record) == ("at or above fp32 in 3 of 4 rows: x1.00-1.06, each one bench run of 20 or 10 "
                                       "steps, not repeated")
    record["runs"][1]["rows"] = []
    record["runs"][0]["rows"][0]["speed_vs_fp32"] = 0.9
    assert gpu.faster_said(record) == "at or above fp32 in 0 of 2 rows"


def test_the_rows_left_out_of_the_sst_curve_are_named_from_the_logged_iterations():
    sst = copy.deepcopy(records.load("gpu")["sst"])
    assert gpu.left_out(sst) == "the rows of 600, 1,400-1,600, 2,000-2,200 and 2,600-3,000 left out"
    sst["settings"]["every"] = 1000  # logged at 1,000, 2,000, 3,000 and the last, 3,193
    sst["curve"] = [{"iteration": i} for i in (1000, 2000, 3000, 3193)]
    assert gpu.left_out(sst) == "none left out"
    sst["curve"] = [{"iteration": i} for i in (1000, 3193)]
    assert gpu.left_out(sst) == "the rows of 2,000-3,000 left out"


def test_the_grid_heading_gives_the_runs_commit_only_where_recorded():
    table2 = copy.deepcopy(records.load("table2"))
    found = gpu.grid_values(table2)
    assert found["grid_heading"] == "H200; the runs' commit not recorded, reported in 373bb2a"
    assert found["grid_machine"].endswith("(torch and driver versions not recorded)")
    for r in table2["runs"]:
        if r["machine"] == "h200":
            r["commit"] = "abc1234"
    assert gpu.grid_values(table2)["grid_heading"] == "H200, commit abc1234"


def test_torch_compile_is_not_said_to_have_been_measured():
    page = (records.ROOT / gpu.PAGE).read_text(encoding="utf-8")
    assert "measured on the CPU only" not in page and "was not measured with a record" in page
    assert "commit 373bb2a)" not in page
