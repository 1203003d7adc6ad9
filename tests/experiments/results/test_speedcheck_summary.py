"""experiments/results/speedcheck_summary.py: each session names its CPU model and bf16 units; the columns align."""
from __future__ import annotations

from experiments.results import records, speedcheck, speedcheck_summary


def test_each_session_names_its_cpu_and_units_and_both_load_columns_align_alike():
    text = speedcheck_summary.values()["sessions"]
    lines = text.splitlines()
    for session in speedcheck.sessions():
        heading = next(i for i, line in enumerate(lines) if line.startswith(f"## {session.name} "))
        assert lines[heading + 2] == f"Machine: {records.describe_machine(session.machine)}."
        assert "bf16 units (" in lines[heading + 2]
    assert "|---|---|---:|---:|---:|---:|---|---|---|" in text
    assert "|---|---|---:|---:|---:|---:|---:|---|---|" not in text
