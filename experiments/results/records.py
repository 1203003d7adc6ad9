"""The records behind the results pages: where they are, how they are read, what a run record holds.

A record is JSON (``.json``, or ``.json.gz`` where large) under docs/results/records/ or one of the JSON
files committed beside the pages (docs/results/*.json). A run in a record carries `RUN_FIELDS`; a field
that was not kept when the run was made is null, never guessed, and the record says where its figures
come from (`source`).
"""
from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "docs" / "results"
RECORDS = RESULTS / "records"
# command, commit, params digest, seed, machine, load, minutes, curve, final per-task scores (intervals where
# the run kept per-example statistics)
RUN_FIELDS = ("command", "commit", "params_digest", "seed", "machine", "load", "minutes", "curve", "scores")
MACHINE_FIELDS = ("cpu", "cores", "bf16_units", "gpu")


class RecordError(ValueError):
    """A record is missing or lacks a field a page needs."""


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    """The record `name`: docs/results/records/<name>.json(.gz), else docs/results/<name>.json."""
    for path in (RECORDS / f"{name}.json", RECORDS / f"{name}.json.gz", RESULTS / f"{name}.json"):
        if path.is_file():
            raw = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
            return json.loads(raw.decode("utf-8"))
    raise RecordError(f"no record {name!r} in {RECORDS} or {RESULTS}")


def check_runs(runs: list[dict]) -> list[str]:
    """The problems of a record's runs: each lacking field, by run (empty when every run is complete)."""
    problems = []
    for i, run in enumerate(runs):
        missing = [f for f in RUN_FIELDS if f not in run]
        if missing:
            problems.append(f"run {run.get('name', i)}: no {', '.join(missing)}")
    return problems


def check_record(record: dict) -> list[str]:
    """The problems of a record: a machine lacking MACHINE_FIELDS, a run lacking RUN_FIELDS or naming a machine
    the record does not describe."""
    machines = record.get("machines", {})
    problems = [f"machine {k}: no {', '.join(f for f in MACHINE_FIELDS if f not in m)}"
                for k, m in machines.items() if any(f not in m for f in MACHINE_FIELDS)]
    runs = record.get("runs", [])
    runs = list(runs.values()) if isinstance(runs, dict) else runs
    problems += check_runs(runs)
    problems += [f"run {r.get('name')}: unknown machine {r['machine']!r}" for r in runs
                 if "machine" in r and r["machine"] not in machines]
    return problems


def bf16_unit(name: str) -> bool:
    """Whether a CPU flag names a bf16 or AMX unit (avx512_bf16, amx_bf16, amx_tile, amx_int8, ...; not avx512f)."""
    return "bf16" in name or "amx" in name


def unit_names(found: dict) -> str:
    """The machine's bf16 and AMX units by name where the record lists them (`units`, filtered by `bf16_unit`:
    'avx512_bf16, amx_bf16, ...', 'avx512_bf16; no AMX', 'no bf16 units'), else what the record leaves open."""
    units = found.get("units")
    if units is None:
        return {True: "AMX not recorded", False: "no bf16 units", None: "not recorded"}[found["bf16_units"]]
    named = [u for u in units if bf16_unit(u)]
    if not named:
        return "no bf16 units"
    return ", ".join(named) + ("" if any(u.startswith("amx") for u in named) else "; no AMX")


def describe_machine(found: dict) -> str:
    """One line: CPU model, cores, bf16 units (by name where recorded: AMX or not), GPU."""
    bf16 = {True: "with bf16 units", False: "without bf16 units", None: "bf16 units not recorded"}[found["bf16_units"]]
    names = f" ({unit_names(found)})" if found["bf16_units"] else ""
    gpu = f", GPU {found['gpu']}" if found["gpu"] else ""
    cpu = found["cpu"] or "CPU model not recorded"
    return f"{cpu}, {found['cores']} cores, {bf16}{names}{gpu}"


def floors(group: str = "validation") -> dict[str, dict]:
    """{task: its floors} of docs/results/records/floors.json (experiments/floors.py): `group` "validation"
    (every validation row) or "table3" (the first 500 rows, what Table 3's runs validated on). Each task:
    {"floors": {answerer: value}, "floor": the highest, "answerer": which, "examples", "metric", ...}."""
    found = load("floors")["sets"]
    if group not in found:
        raise RecordError(f"floors.json has no set {group!r} (it has {', '.join(found)}): rerun experiments/floors.py")
    return found[group]
