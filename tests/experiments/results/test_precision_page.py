"""experiments/results/precision.py: the page's dates, commands, machines and the memory checks beside the QA-SRL
pair come from the record, and what it does not hold is said not recorded."""
from __future__ import annotations

import copy

from experiments.results import precision, records


def record():
    return copy.deepcopy(records.load("precision"))


def test_the_date_range_comes_from_the_runs():
    found = record()
    assert precision.dates_and_machines(found).startswith("2026-11-25 to 2026-11-26; `epyc`: ")
    assert "runs of 2026-11-26" in precision.dates_and_machines(found)
    for r in found["runs"]:
        r["date"] = "2026-12-01" if r["machine"] == "xeon" else r["date"]
    assert precision.dates_and_machines(found).startswith("2026-11-25 to 2026-12-01;")
    for r in found["runs"]:
        r.pop("date")  # no run date: the record's
    assert precision.dates_and_machines(found).startswith(f"{found['date']}; ")


def test_the_other_seeds_commands_are_the_records_own():
    found = record()
    lines = precision.other_seeds(found).splitlines()
    others = [r for r in found["runs"] if r["task"] == "sst" and r["seed"] != 123]
    assert len(lines) == len(others) and all(r["command"] in "\n".join(lines) for r in others)
    assert "--out" not in precision.other_seeds(found) and "sst-qptr-s11, commit f3744eb" in lines[-1]


def test_the_memory_checks_beside_the_pair_are_counted_from_the_record():
    found = record()
    assert precision.beside_pair(found) == ("3 of the 5 memory checks (below) ran beside this pair (the record does "
                                            "not hold which)")
    found["memory"]["beside_srl_pair"]["settings"] = ["fp32", "bf16, oneDNN's default cache"]
    assert precision.beside_pair(found).endswith("(fp32, bf16, oneDNN's default cache)")
    del found["memory"]["beside_srl_pair"]
    assert precision.beside_pair(found) == ("whether any of the 5 memory checks (below) ran beside this pair is not "
                                            "recorded")


def test_the_agreement_timings_name_their_machine_or_say_it_is_not_recorded():
    found = record()
    assert precision.agreement_where(found).startswith("Decoded on `epyc` (AMD EPYC")
    assert "load not recorded" in precision.agreement_where(found)
    found["agreement"]["machine"] = None
    assert precision.agreement_where(found).startswith("Decoded on a machine not recorded")


def test_the_seed_123_speed_is_not_put_down_to_the_step_size_alone():
    note = precision.seed_speed_note(record())
    assert note.startswith("it ran on `epyc`: AMD EPYC") and "not told apart" in note
    page = (records.ROOT / precision.PAGE).read_text(encoding="utf-8")
    assert "too small for the bf16 units to matter" not in page and "three short" not in page


def test_the_bf16_cpus_name_their_units_as_speed_md_does():
    """audit4 4-P1: one machine, one wording: records.unit_names (no avx512f)."""
    from experiments.results import speed, speedcheck
    cpus = precision.bf16_cpus()
    assert cpus and not any("avx512f" in c for c in cpus)
    timed = {speed.cpu_units(s) for s in speedcheck.sessions()
             if any(v.startswith("bf16") for v in s.meta["variants"].values())}
    assert set(cpus) == timed


def test_the_xeon_runs_commits_are_no_later_than_the_runs():
    """audit4 4-P2: a run's `commit` is the code it ran (the latest commit before it can have started), not the
    HEAD at its import: sst-qptr-s11 ended before afb3c74, sst-bf16-s7 began before c42a82a."""
    found = {r["name"]: r["commit"] for r in record()["runs"] if r["machine"] == "xeon"}
    assert found == {"sst-qptr-s11": "f3744eb", "sst-bf16-s11": "afb3c74", "sst-fp32-s7": "afb3c74",
                     "sst-bf16-s7": "afb3c74"}
    assert "first recorded it less its minutes" in record()["source"]
