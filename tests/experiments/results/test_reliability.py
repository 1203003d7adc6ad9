"""experiments/results/reliability.py: the fault bench's page from its record (tests/faults/record.py writes it):
a table per group with its count, the cases not handled and not run named, and the committed record complete."""
from __future__ import annotations

from experiments.results import records, reliability
from experiments.results.reliability import GROUPS


def case(group: str, name: str, verdict: str, kind: str = "fast", evidence: str = "x") -> dict:
    return {"group": group, "name": name, "origin": "issue 34", "kind": kind, "test": None, "verdict": verdict,
            "evidence": evidence, "seconds": 1.25}


CASES = [case("bad input", "a | b", "handled", evidence="error: y" * 40), case("fault", "c", "not handled"),
         case("fault", "d", "not run", "slow", "deselected (-m 'fault and not slow')"),
         case("load", "e", "handled", "slow")]


def test_each_group_is_counted_over_the_cases_run():
    text = reliability.group_tables(CASES)
    assert "### bad input: 1 of 1 handled" in text and "### fault: 0 of 1 handled, 1 not run" in text
    assert "| a / b | issue 34 | handled | " + "error: y" * 18 + "error:... | 1.2 |" in text
    assert "| c | issue 34 | **NOT HANDLED** | x | 1.2 |" in text and "| d | issue 34 | not run (slow) |" in text
    assert "| e | issue 34 | handled (slow) | x | 1.2 |" in text
    assert reliability.tally(CASES) == "2 of 3 cases handled (1 not handled); 1 cases not run"
    assert reliability.tally(CASES[:1]) == "1 of 1 cases handled"


def test_the_page_names_what_was_not_handled_and_not_run():
    record = {"command": "python -m pytest -m fault", "date": "2026-11-27 00:00 UTC", "commit": "abc", "dirty": True,
              "machine": "m", "machines": {"m": {"cpu": "X", "cores": 2, "bf16_units": False, "gpu": None}},
              "load": {"before": [1.0, 0.5, 0.25], "after": [2, 1, 0.5]}, "minutes": 3.14, "cases": CASES}
    got = reliability.values(record)
    assert got["not_handled"] == "- **c** (issue 34): x"
    assert got["not_run"] == "  - d: deselected (-m 'fault and not slow')"
    assert got["commit"] == "abc with uncommitted changes" and got["minutes"] == "3.1"
    assert got["load_before"] == "1, 0.5, 0.25" and got["slow_share"] == ", most of it the slow tests"
    assert got["machine"] == "X, 2 cores, without bf16 units"


def test_the_committed_record_has_a_verdict_for_every_case():
    record = records.load("reliability")
    assert records.check_record(record) == [] and record["commit"] and record["date"]
    assert {c["verdict"] for c in record["cases"]} <= {"handled", "not handled", "not run"}
    assert all(c["group"] in GROUPS and c["evidence"] for c in record["cases"])


def test_cases_are_counted_beside_the_tests_they_come_from():
    cases = [case("fault", "a", "handled"), case("fault", "b", "handled"), case("fault", "c", "handled")]
    cases[0]["test"] = cases[1]["test"] = "tests/t.py::test_ab"
    cases[2]["test"] = "tests/t.py::test_c"
    assert reliability.tests_of(cases) == "3 cases from 2 tests; 2 cases are one test (`tests/t.py::test_ab`), " \
                                         "each showing its 1.2 s"
    assert reliability.seconds(cases) == 2.5  # the shared test's 1.25 s once
    assert reliability.tests_of(cases[2:]) == "1 case from 1 test"
