"""experiments/results/serve_fairness.py: percentiles, slowdowns and the target verdict computed from the samples."""
from __future__ import annotations

import copy

from experiments.results import serve_fairness as page

TARGET = {"small_p99_s": 2.0, "large_slowdown": 0.10}


def server(name: str, busy: list[float], alone: float | None, beside: float | None) -> dict:
    return {"name": name, "what": name, "options": [], "idle": [0.03, 0.04], "busy": busy,
            "large_alone": alone, "large": beside}


def record(*servers: dict) -> dict:
    return {"target": TARGET, "servers": list(servers)}


def test_p99_is_the_nearest_rank_and_the_largest_of_few_samples():
    assert page.p99([3.0, 1.0, 2.0]) == 3.0
    assert page.p99([float(i) for i in range(1, 201)]) == 198.0
    assert page.p99([]) is None


def test_each_target_is_computed_from_the_samples():
    fast = page.summary(server("budget", [0.5] * 98 + [1.9, 2.5], 100.0, 109.0), TARGET)
    assert fast["p99_met"] and fast["slowdown_met"] and round(fast["slowdown"], 2) == 0.09
    slow = page.summary(server("budget", [0.5] * 98 + [2.1, 2.2], 100.0, 111.0), TARGET)
    assert not slow["p99_met"] and not slow["slowdown_met"]
    unmeasured = page.summary(server("ray", [], 100.0, None), TARGET)
    assert unmeasured["p99_met"] is None and unmeasured["slowdown_met"] is None


def test_the_verdict_needs_every_targeted_setting_and_ignores_the_unbudgeted_one():
    good = [server(n, [1.0] * 50, 100.0, 105.0) for n in ("budget", "over", "ray")]
    assert page.verdict(record(*good, server("unbudgeted", [90.0], 40.0, 95.0))) == "met (in one run per setting)"
    assert page.verdict(record(*good[:2])) == "missed (ray: not measured)"
    worse = copy.deepcopy(good)
    worse[1]["busy"][-1] = 2.5
    assert page.verdict(record(*worse)) == "missed (over: small-call p99 missed)"


def test_the_spread_of_the_large_call_alone_counts_only_the_targeted_settings():
    first = record(server("budget", [1.0], 70.0, 71.0), server("unbudgeted", [30.0], 10.0, 11.0))
    second = record(server("ray", [0.1], 77.0, 77.0))
    text = page.alone_spread(first, second)
    assert text.startswith("The large call alone took 70.0 to 77.0 s over the 2 targeted") and "(10% apart)" in text


def test_the_back_to_back_rate_is_the_calls_over_the_large_calls_time():
    found = {"servers": [server("ray", [0.1] * 35, 12.0, 10.0)]}
    assert page.call_rate(found, "ray") == "3.5"


def test_a_p99_of_fewer_than_100_samples_is_said_to_be_their_largest():
    text = page.values()["unbudgeted_p99"]
    n = len(next(s for s in page.records.load(page.RECORD)["servers"] if s["name"] == "unbudgeted")["busy"])
    assert text.endswith(f"(the largest of {n} samples)")


def test_a_slowdown_within_the_noise_between_runs_is_not_shown_to_meet_the_target():
    good = [server(n, [1.0] * 50, 100.0, 105.0) for n in ("budget", "over", "ray")]
    noisy = record(server("budget", [1.0] * 50, 116.0, 116.0))  # the same large call alone, 16% slower
    assert page.verdict(record(*good), noisy) == "not shown (the slowdowns lie within the noise between runs)"
    assert page.verdict_why(record(*good), noisy) == (
        "The small-call p99 is within 2 s on every targeted setting. Each run measured each setting once: the "
        "slowdowns (+0.0% to +5.0% over 4 pairs of runs; \"budget\" each ran in 2 runs) are each one pair of runs, "
        "and the large call alone varied 16% between runs, more than the 10% allowed.")
    calm = record(server("budget", [1.0] * 50, 105.0, 105.0))
    assert page.verdict(record(*good), calm).startswith("met (")
    worse = copy.deepcopy(good)
    worse[0]["large"] = 120.0  # a missed target stays missed, noise or not
    assert page.verdict(record(*worse), noisy) == "missed (budget: large-call slowdown missed)"


def test_the_page_says_when_the_model_answers_a_long_row_in_one_step():
    assert page.model_steps({"row_answer_tokens": 1}).endswith("(those are tested with a slow fake model in "
                                                               "tests/infer/serve/test_engine.py).")
    assert page.model_steps({"row_answer_tokens": 12}) == "The model answers each long row in 12 greedy steps " \
                                                          "(the floor below)."


def test_the_thread_counts_are_said_in_the_singular_for_one():
    floor = copy.deepcopy(page.records.load("serve_fairness")["floor"])
    floor.update(threads=1, all_cores=2)
    assert "1 torch thread," in page.floor_text(floor) and "with 2 threads," in page.floor_text(floor)
    floor.update(threads=4)
    assert "4 torch threads," in page.floor_text(floor)


def test_the_slowdowns_said_are_those_of_every_run_on_the_page():
    text = page.values()["verdict_why"]
    found = [page.summary(s, r["target"])["slowdown"] for r in (page.records.load(page.RECORD),
                                                               page.records.load(page.BACK_TO_BACK))
             for s in r["servers"] if s["name"] in page.TARGETED]
    assert f"({page.slowdown_span(found)} over {len(found)} pairs of runs;" in text
    assert "with the small calls paced differently" in text


def test_a_batch_size_above_the_rows_says_the_largest_batch_formed():
    from experiments.results import batch_invariance
    case = {"threads": 1, "batch_size": 64, "rows": [{"same_answer": True, "probability": 0.0, "weights": 0.0}] * 33}
    assert batch_invariance.size_cell(case) == "64 (largest batch formed: 33)"
    assert batch_invariance.formed(case) == "1 x 33"
    case["batch_size"] = 16
    assert (batch_invariance.size_cell(case), batch_invariance.formed(case)) == ("16", "2 x 16, 1 x 1")
    case["batches"] = [16, 17]  # what the record holds wins
    assert batch_invariance.formed(case) == "1 x 17, 1 x 16" and batch_invariance.size_cell(case) == "16"
