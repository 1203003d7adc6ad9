"""experiments/results/scale.py: scale.md's figures are computed from the benches' records, and a bench
without a record gives a line saying it was not rerun instead of figures."""
from __future__ import annotations

import pytest

from experiments.results import scale

MACHINE = {"cpu": "Test CPU", "cores": 2, "bf16_units": True, "gpu": None}


def base(command: str) -> dict:
    return {"command": command, "commit": "abc1234", "date": "2026-11-26 23:40 UTC", "machine": MACHINE,
            "load_before": [1.5, 1.0, 0.5], "load_after": [2.0, 1.2, 0.6]}


def prepare_record(mp2_digest: str = "d1") -> dict:
    def run(s, digest="p"):
        return {"seconds": s, "examples": 1000, "rss_mb": 300.0, "digest": digest}
    runs = {"plain": [run(6.0), run(5.0)], "plain-cached": [run(3.0), run(2.5)], "beam": [run(4.0, "d1"), run(3.7, "d1")],
            "beam-mp2": [run(3.5, mp2_digest), run(2.9, "d1")]}
    rate = {v: 1000 / min(r["seconds"] for r in rs) for v, rs in runs.items()}
    ratios = {f"{v}/plain": rate[v] / rate["plain"] for v in rate if v != "plain"}
    ratios["beam-mp2/plain-cached"] = rate["beam-mp2"] / rate["plain-cached"]
    return {**base("python -m bench.prepare --repeat 2"), "settings": {"repeat": 2, "jobs": {"sst": ["train"]}},
            "runs": runs, "ratios": ratios}


def test_prepare_figures_use_the_median_runs_and_compare_every_beam_digest():
    found = scale.prepare_figures(prepare_record())
    assert found["median"] == {"plain": 5.5, "plain-cached": 2.75, "beam": 3.85, "beam-mp2": 3.2}
    assert found["ratios"]["beam-mp2/plain"] == pytest.approx(5.5 / 3.2)
    assert found["ratios"]["beam-mp2/plain-cached"] == pytest.approx(2.75 / 3.2)
    assert found["identical"] and found["compared"] == 4
    assert found["beam_extra"] == pytest.approx(1.1)
    assert not scale.prepare_figures(prepare_record(mp2_digest="other"))["identical"]


def test_the_prepare_section_gives_the_medians_of_the_runs():
    text = scale.prepare_section(prepare_record())
    assert "1.72x the plain loop's examples/s (median 3.20 s vs 5.50 s; its runs 2.90-3.50 s)" in text
    assert "`.venv/bin/python -m bench.prepare --repeat 2`" in text and "load average (1 minute) 1.50 before, 2.00 after" in text
    assert "| beam-mp2 | 3.50, 2.90 | 3.20 (2.90-3.50) |" in text and "are identical over the 4 runs" in text
    assert "Results (medians of the runs):" in text and "No headline" not in text and "best" not in text


def test_a_loaded_run_gives_no_headline():
    rec = prepare_record()
    rec["load_before"] = [3.45, 3.0, 3.0]
    text = scale.prepare_section(rec)
    assert "No headline: load above the cores (3.45 before, 2.00 after on 2 cores)." in text
    assert "Results" not in text
    rec["load_before"] = None
    assert "No headline: load not recorded." in scale.prepare_section(rec)


def metrics_record(load: float) -> dict:
    suite = [{"set": "A", "task": "sst", "examples": 100, "headline": "em", "value": 50.0, "seconds": [1.0, 3.0]},
             {"set": "B", "task": "srl", "examples": 100, "headline": "nf1", "value": 40.0, "seconds": [2.0, 2.0]}]
    rouge = {"pairs": 100, "words_per_pair": 10.0, "same_scores_1_and_2_processes": True,
             "seconds": {"direct": [8.0, 10.0], "one": [4.0, 4.0], "two": [3.0, 5.0]}}
    return {**base("python -m bench.metrics"), "load_before": [load, 1.0, 1.0], "suite": suite, "rouge": rouge}


def test_the_metrics_use_the_medians_of_the_repeats():
    text = scale.metrics_section(metrics_record(1.0))
    assert "200 real examples scored in 4.00 s (the sum of each set's median time; of the fastest and of the " \
           "slowest repeats 3.00-5.00 s)" in text
    assert "| A | sst | 100 | em | 50.00 | 1.000, 3.000 | 50 |" in text
    assert "ROUGE with 2 processes runs at 1.00x one process (2.25x calling rouge-score directly), from the " \
           "medians" in text
    assert "Results (medians of the repeats):" in text
    assert "No headline: load above the cores" in scale.metrics_section(metrics_record(3.5))


def test_ray_figures_give_the_fixed_seconds_range_over_the_ray_runs():
    def setup(tps, wall, fixed):
        return {"tokens_per_s": tps, "wall_s": wall, "fixed_s": fixed}
    rec = {**base("python -m bench.ray_scaling"), "settings": {"tasks": ["sst"], "data": "real", "dimension": 200,
                                                              "budget": 10000, "iterations": 12, "precision": "fp32"},
           "results": {"plain loop, 1 thread": setup(100.0, 30.0, 1.0), "plain loop, 2 threads": setup(150.0, 20.0, 1.0),
                       "ray, 1 worker": setup(97.0, 50.0, 21.0), "ray, 2 workers": setup(140.0, 45.0, 28.4)},
           "ratios": {"time_per_token_ray1_vs_plain1": 100 / 97, "ray2_vs_ray1": 140 / 97, "plain2_vs_plain1": 1.5,
                      "ray2_vs_best_plain": 140 / 150}}
    text = scale.ray_section(rec, None)
    assert "Results (one run, no repeat):" in text
    assert "1.03x a plain 1-thread loop's time per token, plus 21.0-28.4 s fixed" in text
    assert "2 workers: 1.44x one worker. A plain loop gets 1.50x" in text
    assert "| ray, 2 workers | 140 | 1.40x | 45.0 | 28.4 |" in text
    assert "Not rerun: `bench.ray_scaling --precision bf16`" in text


def test_a_loaded_ray_run_gives_no_bold_headline():
    def setup(tps):
        return {"tokens_per_s": tps, "wall_s": 10.0, "fixed_s": 1.0}
    rec = {**base("python -m bench.ray_scaling --precision bf16"),
           "settings": {"tasks": ["sst"], "data": "real", "dimension": 200, "budget": 10000, "iterations": 24,
                        "precision": "bf16"},
           "results": {"plain loop, 1 thread": setup(100.0), "ray, 2 workers": setup(59.0)},
           "ratios": {"ray2_vs_best_plain": 0.59, "ray2_vs_ray1": 0.78, "plain2_vs_plain1": 0.11}}
    assert "**0.59x the best plain loop**" in scale.ray_section(None, rec)
    rec["load_after"] = [4.18, 3.9, 3.6]
    text = scale.ray_section(None, rec)
    assert "**" not in text.split("In bf16")[1].replace("**Date:**", "").replace("**Machine:**", "").replace(
        "**Command:**", "").replace("**Setup:**", "")
    assert "No headline: one run; load above the cores during it (1.50 before, 4.18 after on 2 cores): not a " \
           "measure of scaling" in text and "reaches 0.59x the best plain loop" in text


def serve_record(uvicorn_qps: float, ray_qps: float, same: bool = True) -> dict:
    def res(qps, p50):
        return {"questions_per_s": qps, "p50_ms": p50}
    health = {"batching": {"rows": 2008, "batches": 325, "largest_batch": 32}}
    settings = {"tasks": ["sst"], "max_batch": 32, "max_wait_ms": 5.0, "calls": 200, "seconds": 60.0}
    return {**base("python -m bench.serve"), "settings": settings, "same_answers": same,
            "servers": {"uvicorn": {"one": res(uvicorn_qps, 33.0), "health": health},
                        "ray_serve_2_replicas": {"one": res(ray_qps, 58.0), "health": health}}}


def test_the_serve_table_has_each_run_and_the_ratio_range():
    text = scale.serve_section([serve_record(20.0, 15.0), serve_record(19.2, 15.0, same=False)], None)
    assert "| one | 20.0 / 19.2 (p50 33-33 ms) | 15.0 / 15.0 (p50 58-58 ms) | 0.75-0.78x |" in text
    assert "The servers gave different answers in every run" in text and "2,008 / 2,008 questions" in text


def test_a_bench_without_a_record_is_said_not_rerun(monkeypatch):
    monkeypatch.setattr(scale, "optional", lambda name: prepare_record() if name == "prepare" else None)
    found = scale.values()
    assert "Not rerun: `bench.serve`" in found["serve"] and "Not rerun: `bench.metrics`" in found["metrics"]
    assert "`bench.prepare`" not in found["not_rerun"] and "`bench.serve`" in found["not_rerun"]


def test_the_served_model_is_named_with_its_training_or_said_not_recorded():
    model = {"what": "a fully joint model", "date": "2026-11-26 23:50 UTC", "commit": "abc1234",
             "load_before": [3.1, 3.0, 2.9], "command": "python -m experiments.experiment_multitask --joint-minutes 12",
             "minutes_budget": 12, "iterations": 1234, "minutes": 11.52}
    line = scale.model_line(model)
    assert "a 12-minute budget, 1,234 iterations by its last validation (11.5 min)" in line
    assert "`.venv/bin/python -m experiments.experiment_multitask --joint-minutes 12`" in line
    assert scale.model_line(None) == "- **Model:** not recorded."


def test_a_run_that_began_with_more_load_than_cores_says_so():
    quiet, busy_before, busy_after = (base("python -m bench.x") for _ in range(3))
    busy_before["load_before"] = [2.5, 2.0, 1.0]
    busy_after["load_after"] = [4.2, 2.0, 1.0]
    assert "More runnable work than cores" not in scale.header(quiet)
    assert all("More runnable work than cores" in scale.header(r) for r in (busy_before, busy_after))


def repro_record(serial: list[float], parallel: list[float]) -> dict:
    def run(jobs, s):
        return {"jobs": jobs, "seconds": s, "stages_run": 64, "load_before": [0.5, 0.4, 0.3], "load_after": [1.9, 1.0, 0.5]}
    runs = [{"first": "serial" if k % 2 == 0 else "parallel", "serial": run(1, s), "parallel": run(2, p)}
            for k, (s, p) in enumerate(zip(serial, parallel))]
    ratios = [s / p for s, p in zip(serial, parallel)]
    return {**base("python -m bench.repro_jobs --rounds 3 --jobs 2"), "settings": {"rounds": 3, "jobs": 2, "cpus": 2},
            "runs": runs, "summary": {"ratios": ratios, "median": sorted(ratios)[1], "min": min(ratios), "max": max(ratios)}}


def test_the_repro_section_gives_every_round_and_meets_the_target_only_when_every_round_does():
    met = scale.repro_section(repro_record([300, 310, 290], [180, 190, 170]))
    assert "| 2 | parallel | 310 | 190 | x1.63 |" in met and "Median x1.67 (1.63-1.71) over 3 rounds" in met
    assert "**met**" in met
    missed = scale.repro_section(repro_record([300, 310, 290], [180, 250, 170]))
    assert "Median x1.67 (1.24-1.71)" in missed and "**missed**" in missed
    assert "Not rerun: `bench.repro_jobs`" in scale.repro_section(None)


def test_the_elastic_section_plots_every_run_and_gives_their_differences():
    def run(what, losses, workers):
        return {"what": what, "losses": losses, "workers": workers, "seconds": 40.0}
    rec = {**base("python -m pytest tests/train/test_elastic_ray.py --elastic-record e.json"),
           "settings": {"tasks": ["sst"], "dimension": 16, "dropout": 0.0, "token_budget": 800, "iterations": 2,
                        "save_every": 1, "loss_rtol": 1e-4, "cluster": "two loopback nodes"},
           "runs": {"1 worker": run("local mode", [2.0, 1.5], [1, 1]),
                    "2 → 1 workers": run("a node killed", [2.0000004, 1.5], [2, 1])},
           "max_difference": {"2 → 1 workers": {"loss": 4e-7, "weight": 6e-6}}}
    text = scale.elastic_section(rec)
    assert "  x-axis \"iteration\" [1, 2]" in text and text.count("  line [") == 2
    assert "  line [2.00000, 1.50000]" in text
    assert "| 2 | 1.500000 (1) | 1.500000 (1) |" in text and "| 1 | 2.000000 (1) | 2.000000 (2) |" in text
    assert "- 2 → 1 workers against 1 worker: largest loss difference 4e-07, largest weight difference 6e-06" in text
    assert "d = 16, dropout 0.0, global budget 800, 2 iterations, a checkpoint every 1; two loopback nodes." in text
    assert scale.elastic_section(None).startswith("Not rerun: the elastic training test")
