"""experiments/results/speedcheck.py, speed.py: rounds paired by tag, ratios per round, machine facts, targets."""
from __future__ import annotations

import json

import pytest

from experiments.results import records, speed, speed_drift, speed_profiles, speedcheck

MACHINE = """Thu Nov 26 18:29:46 UTC 2026
CPU(s):                                  2
Model name:                              Intel(R) Xeon(R) Processor
avx512_bf16: avx512_bf16; amx: amx_bf16
amx_tile
amx_int8; avx512f: avx512f
"""


def result(impl, mode, task, rnd, ex_s, rss, variant="main"):
    return {"impl": impl, "mode": mode, "task": task, "tag": f"{variant}/r{rnd}", "examples_per_s": ex_s,
            "peak_rss_gb": rss, "load_before": [1.0, 1, 1], "load_after": [1.5, 1, 1], "torch": "2.13.0+cpu",
            "trainable_params": 17 if impl == "project" else 14, "examples_per_batch": 50.0, "s_per_step": 1.0,
            "times": [1.0]}


@pytest.fixture
def session_dir(tmp_path):
    folder = tmp_path / "2026-11-26-x"
    folder.mkdir()
    rows = [result("original", "train", "sst", 1, 10.0, 4.0), result("project", "train", "sst", 1, 30.0, 1.0),
            result("original", "train", "sst", 2, 10.0, 4.0), result("project", "train", "sst", 2, 20.0, 3.0),
            result("original", "decode", "sst", 1, 10.0, 1.0)]  # a round without the project's run
    (folder / "results.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (folder / "machine.txt").write_text(MACHINE, encoding="utf-8")
    (folder / "run.json").write_text(json.dumps({"date": "2026-11-26", "utc": "18:29-18:39", "commit": "abc",
                                                 "what": "fp32", "commands": ["run_all.sh"],
                                                 "variants": {"main": "fp32"}}), encoding="utf-8")
    return tmp_path


def test_machine_facts_from_lscpu_lines():
    found = speedcheck.machine(MACHINE)
    assert found["cpu"] == "Intel(R) Xeon(R) Processor" and found["cores"] == 2 and found["bf16_units"] is True
    assert not speedcheck.machine("Model name: AMD EPYC\nCPU(s): 2\navx512_bf16: absent; amx: absent")["bf16_units"]


def test_rounds_pair_each_case_by_round_and_give_median_and_range(session_dir):
    [session] = speedcheck.sessions(session_dir)
    found = {r.case: r for r in speedcheck.rounds(session)}
    assert found["train sst"].ratios() == [3.0, 2.0]
    assert found["train sst"].summary() == (2.5, 2.0, 3.0)
    assert found["train sst"].ratios("peak_rss_gb") == [0.25, 0.75]
    assert found["decode sst"].original == []  # no round with both sides
    assert speedcheck.loads(session) == (1.0, 1.5)


def _train_sst_line(sessions):
    text, _ = speed.targets_table(sessions)
    return [line for line in text.splitlines() if line.startswith("| train sst")]


def test_a_target_is_met_only_when_every_round_of_the_latest_session_meets_it(session_dir, monkeypatch):
    [session] = speedcheck.sessions(session_dir)
    monkeypatch.setattr(speed, "RSS_BASELINE", session.name)  # its own median, 0.50, is the memory goal
    session.meta["variants"] = {"main": speed.HEADLINE}
    speed_line, rss_line = _train_sst_line([session])
    assert "x2.50 (2.00-3.00)" in speed_line and speed_line.endswith("| met |")  # x3 and x2 against >= x2
    assert "0.50 (0.25-0.75)" in rss_line  # its own rounds: within the baseline's spread, neither met nor missed
    assert rss_line.endswith(f"| {speed.NOT_SHOWN} |")
    next(r for r in session.results if r["impl"] == "project" and r["tag"] == "main/r2")["examples_per_s"] = 15.0
    speed_line, _ = _train_sst_line([session])
    assert "x2.25 (1.50-3.00)" in speed_line and speed_line.endswith("| missed |")  # the median alone would pass
    assert speed.ratio((2.5, 2.0, 3.0)) == "x2.50 (2.00-3.00)"


def test_a_round_begun_above_the_cores_is_not_judged(session_dir, monkeypatch):
    [session] = speedcheck.sessions(session_dir)
    monkeypatch.setattr(speed, "RSS_BASELINE", session.name)
    session.meta["variants"] = {"main": speed.HEADLINE}
    for r in session.results:
        if r["tag"] == "main/r2":
            r["load_before"] = [9.0, 1, 1]
    speed_line, _ = _train_sst_line([session])
    assert "x3.00 (3.00-3.00)" in speed_line


def test_a_session_without_its_run_json_fields_is_named(tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "run.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(records.RecordError, match="broken"):
        speedcheck.sessions(tmp_path)


def test_the_committed_sessions_say_the_same_allocator_for_both():
    for session in speedcheck.sessions():
        assert {r.get("malloc") for r in session.results} == {"project thresholds"}, session.name


def test_the_headline_is_one_named_configuration_over_its_calm_rounds(session_dir):
    [session] = speedcheck.sessions(session_dir)
    assert speed.headline([session], "train sst", "fp32") == "train sst x2.50 (2.00-3.00) over 2 rounds"
    session.results[1]["load_after"] = [2.5, 1, 1]  # round 1's project process ran with more load than cores
    assert speed.headline([session], "train sst", "fp32") == "train sst x2.00 (2.00-2.00) over 1 round"
    assert speed.headline([session], "train sst", "bf16") == "train sst -"


def test_the_committed_headline_names_its_configuration():
    assert speed.in_short(speedcheck.sessions()).startswith(f"examples/s against the original, {speed.HEADLINE},")
    # a case's figure comes from the latest session that measured that case, which need not be the CPU's latest
    assert "from the latest session that measured each case on each CPU" in speed.in_short(speedcheck.sessions())


def test_each_cpu_model_is_judged_on_its_own_latest_session(session_dir, monkeypatch):
    [intel] = speedcheck.sessions(session_dir)
    monkeypatch.setattr(speed, "RSS_BASELINE", intel.name)
    intel.meta["variants"] = {"main": speed.HEADLINE}
    amd_results = [dict(r) for r in intel.results]
    for r in amd_results:
        if r["impl"] == "project":
            r["examples_per_s"] = r["examples_per_s"] / 2  # x1.5 and x1.0: missed on this CPU
    amd = speedcheck.Session("2026-11-27-y", {**intel.meta, "date": "2026-11-27"},
                             {**intel.machine, "cpu": "AMD EPYC"}, amd_results)
    speed_lines = [line for line in _train_sst_line([intel, amd]) if "examples/s" in line]
    assert len(speed_lines) == 2
    intel_cpu = "Intel(R) Xeon(R) Processor (avx512_bf16, amx_bf16, amx_tile, amx_int8), 2026-11-26-x"
    assert intel_cpu in speed_lines[0] and speed_lines[0].endswith("| met |")
    assert "AMD EPYC (avx512_bf16, amx_bf16, amx_tile, amx_int8), 2026-11-27-y" in speed_lines[1]
    assert speed_lines[1].endswith("| missed |")
    short = speed.in_short([intel, amd])
    on_intel, on_amd = short.split("; on ")
    assert "Intel(R) Xeon(R) Processor: " in on_intel and "train sst x2.50 (2.00-3.00)" in on_intel
    assert on_amd.startswith("AMD EPYC: ") and "train sst x1.25 (1.00-1.50)" in on_amd


def test_the_side_by_side_table_uses_calm_rounds_and_says_how_many(session_dir):
    [session] = speedcheck.sessions(session_dir)
    line = next(x for x in speed.ratio_table([session], "examples_per_s", "x").splitlines() if x.startswith("| fp32"))
    assert "| x2.50 (2.00-3.00) |" in line
    for r in session.results:
        if r["tag"] == "main/r1":
            r["load_after"] = [2.5, 1, 1]  # above the 2 cores: round 1 is not calm
    line = next(x for x in speed.ratio_table([session], "examples_per_s", "x").splitlines() if x.startswith("| fp32"))
    assert "| x2.00 (2.00-2.00), 1 of 2 rounds calm |" in line
    for r in session.results:
        r["load_before"] = [3.0, 1, 1]
    line = next(x for x in speed.ratio_table([session], "examples_per_s", "x").splitlines() if x.startswith("| fp32"))
    assert "| no calm round (0 of 2) |" in line and "x2.50" not in line


def _rounds(ratios, field="examples_per_s"):
    calm_load = {"load_before": [0.5, 1, 1], "load_after": [0.5, 1, 1]}
    return speedcheck.Rounds("v", "train sst", [{field: 1.0, **calm_load} for _ in ratios],
                             [{field: x, **calm_load} for x in ratios])


def test_a_configuration_is_faster_only_where_its_rounds_do_not_overlap():
    assert speed.against(_rounds([2.0, 2.1]), _rounds([1.5, 1.9]), "examples_per_s").endswith("faster in every round")
    assert speed.against(_rounds([1.0, 1.2]), _rounds([1.5, 1.9]), "examples_per_s").endswith("slower in every round")
    assert speed.against(_rounds([1.6, 2.1]), _rounds([1.5, 1.9]), "examples_per_s").endswith("the rounds overlap)")
    # apart by less than the page's 2 decimals: not told apart
    assert speed.against(_rounds([2.2245]), _rounds([2.2214]), "examples_per_s").endswith("the rounds overlap)")
    said = speed.against(_rounds([0.6], "peak_rss_gb"), _rounds([0.5], "peak_rss_gb"), "peak_rss_gb")
    assert said == "peak RSS 0.60 (0.60-0.60) against 0.50 (0.50-0.50), higher in every round"


def test_the_committed_notes_follow_the_records():
    sessions = speedcheck.sessions()
    assert "only on CPUs with bf16 units" in speed.int8_note(sessions)  # no int8 session on a CPU without them
    assert "in 2 rounds (2 cases each), none calm, so no int8 speed is quoted here" in speed.int8_note(sessions)
    assert "train squad: examples/s x2.04 (2.02-2.11) against x2.20 (2.18-2.25), slower in every round" \
        in speed.bf16_note(sessions)
    assert "peak RSS 0.55 (0.53-0.55) against 0.50 (0.47-0.52), higher in every round" in speed.tried_note(sessions)
    assert "AMD EPYC predates the issue" in speed.rss_note(sessions)


def test_rounds_are_counted_once_per_session_not_once_per_case():
    session = speedcheck.Session("s", {}, {"cores": 2}, [])
    found = [(session, _rounds([1.0, 1.1, 1.2])), (session, _rounds([1.0, 1.1, 1.2]))]
    assert speed.rounds_said(found) == "3 rounds (2 cases each), all calm"
    found[0][1].original[0]["load_before"] = [3.0, 1, 1]  # above the 2 cores
    assert speed.rounds_said(found) == "3 rounds (2 cases each), 5 of its 6 case runs calm"
    other = speedcheck.Session("t", {}, {"cores": 2}, [])
    assert speed.rounds_said([*found, (other, _rounds([1.0]))]) == "4 rounds (7 case runs), 6 of its 7 case runs calm"


def test_an_rss_round_inside_the_baseline_spread_is_not_called_missed():
    base = _rounds([0.527, 0.547], "peak_rss_gb")  # the baseline's own two rounds around its median 0.537
    assert speed.rss_verdict(_rounds([0.551, 0.500, 0.495], "peak_rss_gb"), base) == speed.NOT_SHOWN
    assert speed.rss_verdict(_rounds([0.475, 0.519], "peak_rss_gb"), base) == "met"  # below its lowest round
    assert speed.rss_verdict(_rounds([0.99, 1.08], "peak_rss_gb"), base) == "missed"  # above its highest round
    assert speed.tally(["met", "missed", speed.NOT_SHOWN]).startswith("1 of 3 (1 other not shown: peak RSS within")


def test_the_committed_targets_leave_the_rss_rounds_within_the_baseline_spread_unshown():
    text, verdicts = speed.targets_table(speedcheck.sessions())
    assert len(verdicts) == 16 and verdicts.count("met") == 3 and verdicts.count(speed.NOT_SHOWN) == 1
    assert "| <= 0.54 (0.53-0.55), 2026-11-26-fp32 |" in text  # the goal: the baseline's median and min-max
    assert "| <= 0.96 (0.95-0.97), 2026-11-26-fp32 | 0.98 (0.96-1.00) over 3 rounds |" in text  # not shown
    assert speed.values()["targets_met"].startswith("3 of 16 (1 other not shown")


def test_every_table_row_names_its_cpu_and_its_bf16_units():
    sessions = speedcheck.sessions()
    rows = [line for text in (speed.ratio_table(sessions, "examples_per_s", "x"), speed.targets_table(sessions)[0])
            for line in text.splitlines()[2:]]
    assert len(rows) == 11 + 16
    for line in rows:
        assert ("Intel(R) Xeon(R) Processor (avx512_bf16, amx_bf16, amx_tile, amx_int8)" in line
                or "AMD EPYC (avx512_bf16; no AMX)" in line), line


def _later(session, name, original_scale, load15):
    results = [dict(r) for r in session.results]
    for r in results:
        if r["impl"] == "original":
            r["examples_per_s"] *= original_scale
    results[0]["load_before"] = [1.0, 1.0, load15]
    return speedcheck.Session(name, {**session.meta, "date": "2026-11-27", "commit": "def"}, session.machine, results)


def test_a_headline_session_whose_original_ran_slower_says_so_beside_the_headline(session_dir):
    [first] = speedcheck.sessions(session_dir)
    first.meta["variants"] = {"main": speed.HEADLINE}
    second = _later(first, "2026-11-27-x", 0.5, 2.5)  # the unchanged original at half speed, 15-minute load 2.5
    found = speed_drift.drift([first, second], second, "train sst")
    assert found["original"] == 0.5 and found["shift"] == "lower in every round" and found["project"] == 1.0
    note = speed_drift.moved_note([first, second])
    assert "15-minute load 2.50 at the start, above the 2 cores" in note and "x5.00 (4.00-6.00) against x2.50" in note
    assert "The headline still comes from the latest session" in note
    assert "(in 2026-11-27-x the unchanged original ran x0.50 of its examples/s in 2026-11-26-x" in \
        speed.in_short([first, second])
    calm = _later(first, "2026-11-27-x", 1.0, 0.5)
    assert "within the rounds' spread of the session before" in speed_drift.moved_note([first, calm])
    assert "the unchanged original" not in speed.in_short([first, calm])


def test_the_committed_headline_session_says_how_the_machine_moved():
    note = speed_drift.moved_note(speedcheck.sessions())
    quiet = next(line for line in note.splitlines() if line.startswith("- **2026-11-29-fp32-quiet**"))
    assert "15-minute load 0.12 at the start, within the 2 cores" in quiet
    assert ("against 2026-11-29-fp32-fused, the original ran x1.19 of its examples/s there (higher in every round"
            in quiet)
    assert "the ratio x2.37 (2.33-2.38) against x2.16 (2.13-2.35) there" in quiet
    assert "decode squad: against 2026-11-29-fp32-bf16" in quiet  # each case against the last session that ran it


def test_the_counts_and_profile_figures_come_from_the_records():
    sessions = speedcheck.sessions()
    assert speed.timing(sessions, "train") == "2 warm-up steps, then 8 timed"
    assert speed.timing(sessions, "decode") == "256 examples, 50 forced steps (1 warm-up decoding, then 2 timed)"
    fp32, bf16 = (speed_profiles.profile(speed_profiles.PROFILES / p / "cpu_train.txt") for p in ("fp32", "bf16"))
    said = speed_profiles.bf16_profile(sessions, fp32, bf16)
    assert "the model code of 2026-11-29-fp32-bf16" in said and "mm 440.8 -> 383.5, addmm 102.5 -> 85.5" in said
    assert "136.6 ms against 85.7" in said and "1.450 s against 1.383 s" in said
    assert "12.7% of an SST-shaped" in speed_profiles.dropout_share(fp32) and "14.8% of a SQuAD" in speed_profiles.dropout_share(fp32)


def test_a_profile_reads_each_steps_operators_in_milliseconds(tmp_path):
    path = tmp_path / "cpu_train.txt"
    path.write_text("commit: abc\ncpu: X, 2 cores\nload before: [1.0, 1, 1]; after: [2.0, 1, 1]\n\n"
                    "## training step, sst: 9 examples\n"
                    "   aten::mm   50.00%   2.000s   50.00%   2.000s   1.0ms   2\n"
                    "   aten::copy_   1.50%   300.000us   1.50%   300.000us   1.0us   3\n"
                    "Self CPU time total: 4.000s\n", encoding="utf-8")
    found = speed_profiles.profile(path)
    assert found["head"]["commit"] == "abc" and speed_profiles.profile_said(found) == "commit abc, 1-minute load 1.00-2.00"
    assert found["steps"]["sst"] == {"ops": {"aten::mm": (50.0, 2000.0), "aten::copy_": (1.5, 0.3)}, "total": 4000.0}


def _two_variants(session, name, bf16_scale):
    """`session` again as `name`, with a second variant (bf16) whose original ran `bf16_scale` times as fast."""
    results = [dict(r) for r in session.results]
    for r in session.results:
        extra = {**r, "tag": r["tag"].replace("main/", "bf16/")}
        if r["impl"] == "original":
            extra["examples_per_s"] = r["examples_per_s"] * bf16_scale
        results.append(extra)
    meta = {**session.meta, "date": "2026-11-27", "commit": "def",
            "variants": {"main": speed.HEADLINE, "bf16": "bf16 (`--precision bf16`)"}}
    return speedcheck.Session(name, meta, session.machine, results)


def test_the_originals_drift_uses_the_rounds_of_the_headlines_ratio(session_dir):
    """audit4 4-S1: the original's drift pooled both variants of a session (x1.07) while the headline's ratio is
    over the fp32 rounds only (there x1.04), so the ratio's move did not follow from the two figures."""
    [first] = speedcheck.sessions(session_dir)
    first.meta["variants"] = {"main": speed.HEADLINE}
    second = _two_variants(first, "2026-11-27-x", 2.0)  # the headline's rounds as before, the bf16 ones twice as fast
    found = speed_drift.drift([first, second], second, "train sst")
    assert found["original"] == 1.0 and found["shift"] == speed_drift.WITHIN and found["project"] == 1.0
    assert found["earlier"] == (1.0, 1.0, 1)
    assert found["now"].summary() == found["then"].summary()  # the ratio did not move, nor did either side
    said = speed_drift.original_said([first, second], second)
    assert "x1.50" in said and "the rounds of each session's variants pooled" in said  # the session line pools


def test_the_committed_drift_figures_agree_with_their_ratios():
    sessions = speedcheck.sessions()
    session = next(s for s in sessions if s.name == "2026-11-29-fp32-bf16")
    found = speed_drift.drift(sessions, session, "decode squad")
    assert f"{found['original']:.2f}" == "1.04" and f"{found['project']:.2f}" == "1.16"
    moved = found["now"].summary()[0] / found["then"].summary()[0]
    assert abs(found["project"] / found["original"] - moved) < 0.01  # 1.16 / 1.04 against 2.11 / 1.90
    assert ("in 2026-11-29-fp32-quiet the unchanged original ran x1.19-1.21 of its examples/s in 2026-11-29-fp32-fused "
            "and x0.89-1.00 of its examples/s in 2026-11-29-fp32-bf16") in speed.in_short(sessions)


def test_the_fused_sessions_what_says_only_what_its_records_show():
    """audit4 4-S2: no record lists the processes, so 'no other process started during them' is not said; the
    loads are the records'."""
    session = next(s for s in speedcheck.sessions() if s.name == "2026-11-29-fp32-fused")
    low, high = speedcheck.loads(session)
    assert "no other process" not in session.meta["what"]
    assert f"1-minute load {low:.2f}-{high:.2f}" in session.meta["what"]
    command = (speedcheck.ROOT / session.name / "command.txt").read_text(encoding="utf-8")
    assert "nothing else running" not in command and f"1-minute {low:.2f}-{high:.2f}" in command
