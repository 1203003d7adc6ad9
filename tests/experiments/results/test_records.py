"""experiments/results/records.py: every committed record under docs/results/records/ is complete."""
from __future__ import annotations

import pytest

from experiments.results import records

NAMES = sorted(p.name.split(".")[0] for p in records.RECORDS.glob("*.json*"))


@pytest.mark.parametrize("name", NAMES)
def test_every_record_names_its_source_and_its_runs_are_complete(name):
    record = records.load(name)
    assert record.get("source") or record.get("command"), f"{name}: where do its figures come from?"
    assert records.check_record(record) == []


def test_a_run_without_its_machine_or_fields_is_reported():
    record = {"machines": {"m": {"cpu": "x", "cores": 2, "bf16_units": None}},
              "runs": [{"name": "r", "machine": "n", "command": "c"}]}
    problems = records.check_record(record)
    assert any("machine m: no gpu" in p for p in problems)
    assert any("run r: no commit" in p for p in problems)
    assert any("unknown machine 'n'" in p for p in problems)


def test_a_missing_record_is_named():
    with pytest.raises(records.RecordError, match="no record 'nothing'"):
        records.load("nothing")


def test_a_machine_names_its_bf16_units_and_says_where_amx_is_not_recorded():
    intel = {"cpu": "Intel Xeon", "cores": 2, "bf16_units": True, "gpu": None,
             "units": ["avx512_bf16", "amx_bf16", "amx_tile", "amx_int8", "avx512f"]}
    assert (records.describe_machine(intel)
            == "Intel Xeon, 2 cores, with bf16 units (avx512_bf16, amx_bf16, amx_tile, amx_int8)")
    amd = {**intel, "cpu": "AMD EPYC", "units": ["avx512_bf16", "avx512f"]}
    assert records.describe_machine(amd) == "AMD EPYC, 2 cores, with bf16 units (avx512_bf16; no AMX)"
    unknown = {k: v for k, v in amd.items() if k != "units"}
    assert records.describe_machine(unknown) == "AMD EPYC, 2 cores, with bf16 units (AMX not recorded)"
    assert records.describe_machine({**unknown, "bf16_units": False}) == "AMD EPYC, 2 cores, without bf16 units"


def test_the_bf16_units_named_are_those_whose_name_says_bf16_or_amx():
    """audit4 4-P1: precision.md named avx512f among the bf16 units where speed.md did not."""
    machine = {"cpu": "X", "cores": 2, "bf16_units": True, "gpu": None,
               "units": ["avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_fp16", "avx512_vnni"]}
    assert records.unit_names(machine) == "avx512_bf16, amx_bf16, amx_tile, amx_fp16"
