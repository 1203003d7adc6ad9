"""The speedcheck records: what ../shared/speedcheck measured, read back for speed.md and speedcheck_summary.md.

One folder of docs/results/speedcheck/ per measuring session, as the harness left it: results.jsonl (one line per
process: an implementation, a case, a round), machine.txt (lscpu, CPU units, torch), uptime.log, the harness's own
summary.md, and run.json (date, commit, the commands, `variants`: each variant label of results.jsonl and what
it is). A round is the original's run and
the project's run of one case, adjacent in time; a ratio is the project's figure over the original's in that round.
"""
from __future__ import annotations

import json
import re
import statistics
from dataclasses import dataclass
from pathlib import Path

from experiments.results import records

ROOT = records.RESULTS / "speedcheck"
CASES = ("train squad", "train sst", "decode squad", "decode sst")
IMPLS = ("original", "project")


@dataclass(frozen=True)
class Session:
    """One measuring session: its folder name, run.json, machine facts and every process's result."""

    name: str
    meta: dict
    machine: dict
    results: list[dict]


@dataclass(frozen=True)
class Rounds:
    """One variant's case over its rounds: the original's and the project's results, round by round."""

    variant: str
    case: str
    original: list[dict]
    project: list[dict]

    def ratios(self, field: str = "examples_per_s") -> list[float]:
        """project / original of `field`, one per round."""
        return [p[field] / o[field] for o, p in zip(self.original, self.project)]

    def summary(self, field: str = "examples_per_s") -> tuple[float, float, float]:
        """(median, min, max) of the per-round ratios of `field`."""
        found = self.ratios(field)
        return statistics.median(found), min(found), max(found)


def machine(text: str) -> dict:
    """MACHINE_FIELDS from a machine.txt: the CPU model, its cores, whether it has bf16 units (AVX-512 BF16 or
    AMX), and the unit names found."""
    model = re.search(r"Model name:\s*(.+)", text)
    cores = re.search(r"^CPU\(s\):\s*(\d+)", text, re.M)
    # the harness's line "avx512_bf16: <found|absent>; amx: <found...|absent>; avx512f: ..." (lines may wrap)
    block = text[text.find("avx512_bf16:"):] if "avx512_bf16:" in text else ""
    block = block.split("\ntorch", 1)[0]
    units = [w for w in re.split(r"[\s;]+", re.sub(r"\b[a-z0-9_]+:", " ", block)) if w and w != "absent"]
    return {"cpu": model.group(1).strip() if model else None, "cores": int(cores.group(1)) if cores else None,
            "bf16_units": "avx512_bf16" in units or "amx_bf16" in units, "gpu": None, "units": units}


def load(folder: Path) -> Session:
    """The session recorded in `folder`; RecordError naming the file that is missing or not JSON."""
    try:
        meta = json.loads((folder / "run.json").read_text(encoding="utf-8"))
        results = [json.loads(line) for line in (folder / "results.jsonl").read_text(encoding="utf-8").splitlines()
                   if line.strip()]
        found = machine((folder / "machine.txt").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise records.RecordError(f"{folder}: {exc}") from exc
    return Session(folder.name, meta, found, results)


def sessions(root: Path = ROOT) -> list[Session]:
    """Every recorded session, oldest first (by run.json's date and start time)."""
    found = [load(folder) for folder in root.iterdir() if (folder / "run.json").is_file()]
    return sorted(found, key=lambda s: (s.meta["date"], s.meta["utc"], s.name))


def rounds(session: Session) -> list[Rounds]:
    """The session's variants and cases in CASES order, each with the rounds that have both implementations."""
    by_key: dict[tuple[str, str], dict[str, dict[str, dict]]] = {}
    for r in session.results:
        variant, rnd = r["tag"].split("/")
        by_key.setdefault((variant, f"{r['mode']} {r['task']}"), {}).setdefault(rnd, {})[r["impl"]] = r
    out = []
    for (variant, case), by_round in by_key.items():
        paired = [by_round[k] for k in sorted(by_round) if set(IMPLS) <= set(by_round[k])]
        out.append(Rounds(variant, case, [p["original"] for p in paired], [p["project"] for p in paired]))
    order = list(session.meta["variants"])
    return sorted(out, key=lambda r: (order.index(r.variant) if r.variant in order else len(order), CASES.index(r.case)))


def loads(session: Session) -> tuple[float, float]:
    """The lowest and highest 1-minute load average seen before or after any process of the session."""
    found = [r[k][0] for r in session.results for k in ("load_before", "load_after")]
    return min(found), max(found)
