"""The JSON record a bench run leaves with `--record PATH` (docs/results/records/scale/ holds those of
docs/results/scale.md): the command, the commit, the date, the machine (CPU model, cores, bf16 units by name, GPU:
this_machine), the load average before and after, the bench's settings and its own figures (raw per-repeat
timings and the ratios it prints). `commit` and `this_machine` are those of every record, the fault bench's
(tests/faults/record.py) and the experiments' run records (experiments/results/runs.py) too.

    started = record.begin("bench.prepare")       # before the work: command, commit, date, machine, load
    record.write(path, started, settings, {"runs": ..., "ratios": ...})
"""
from __future__ import annotations

import datetime
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from deca.io import atomic_write

ROOT = Path(__file__).resolve().parents[1]


UNIT_FLAGS = ("avx512_bf16", "amx_bf16", "amx_tile", "amx_int8", "avx512f")  # the units a machine.txt names


def this_machine() -> dict:
    """CPU model, cores, whether the CPU has bf16 units (avx512_bf16 / amx_bf16), which of UNIT_FLAGS it has
    (`units`: AMX or not), GPU (None on a CPU run)."""
    info = Path("/proc/cpuinfo").read_text(encoding="utf-8") if Path("/proc/cpuinfo").is_file() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                 "unknown")
    flags = set(next((line.split(":", 1)[1].split() for line in info.splitlines() if line.startswith("flags")), []))
    return {"cpu": model, "cores": os.cpu_count(), "bf16_units": "avx512_bf16" in flags or "amx_bf16" in flags,
            "gpu": None, "units": [u for u in UNIT_FLAGS if u in flags]}


def commit() -> str | None:
    """The repository's HEAD commit (short), or None outside git."""
    found = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return found.stdout.strip() or None


def load() -> list[float] | None:
    """The 1, 5 and 15-minute load averages (None where the system has none)."""
    return [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None


def begin(module: str, argv: list[str] | None = None) -> dict:
    """What a record holds from before the work: the command (`python -m MODULE ARGV`), commit, UTC date and
    time, this machine and the load average."""
    argv = sys.argv[1:] if argv is None else argv
    return {"command": shlex.join(["python", "-m", module, *argv]), "commit": commit(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": this_machine(), "load_before": load()}


def write(path: Path, started: dict, settings: dict, figures: dict) -> dict:
    """Write `started` + the load now + `settings` + `figures` as JSON to `path` (its folder made, the file
    replaced whole or not at all); the record."""
    clash = sorted(set(figures) & {*started, "load_after", "settings"})
    if clash:
        raise ValueError(f"a bench figure may not be named {', '.join(clash)} (the record's own fields)")
    record = {**started, "load_after": load(), "settings": settings, **figures}
    text = json.dumps(record, indent=1) + "\n"
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))  # an interrupted run leaves no half record
    print(f"record: {path}", file=sys.stderr)
    return record
