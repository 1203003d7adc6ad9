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
HEADLINE = "fp32 (the default)"  # the one configuration the speed headline quotes (a run.json `variants` label)


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


def ratio(summary: tuple[float, float, float], digits: int = 2, prefix: str = "x") -> str:
    """'x1.46 (1.44-1.48)': the median ratio over rounds and its min-max."""
    med, low, high = summary
    return f"{prefix}{med:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def cpu_of(session: Session) -> str:
    """The CPU model a session ran on."""
    return session.machine["cpu"] or "CPU model not recorded"


def cpus(sessions: list[Session]) -> list[str]:
    """The CPU models the sessions ran on, in the order first measured (targets are judged per CPU model)."""
    return list(dict.fromkeys(cpu_of(s) for s in sessions))


def on_cpu(sessions: list[Session], cpu: str | None) -> list[Session]:
    """The sessions measured on `cpu` (every session for None)."""
    return [s for s in sessions if cpu is None or cpu_of(s) == cpu]


def calm(found: Rounds, cores: int) -> Rounds:
    """`found` without the rounds in which a process's 1-minute load average, before or after, exceeded the
    machine's cores."""
    def within(r: dict) -> bool:
        return max(r["load_before"][0], r["load_after"][0]) <= cores

    kept = [(o, p) for o, p in zip(found.original, found.project) if within(o) and within(p)]
    return Rounds(found.variant, found.case, [o for o, _ in kept], [p for _, p in kept])


def latest_calm(sessions: list[Session], case: str, name: str = HEADLINE,
                cpu: str | None = None) -> tuple[str, Rounds | None]:
    """The latest session's calm rounds of configuration `name` on `case`, on `cpu` if given (its session name;
    None where none)."""
    found = [(s.name, calm(r, s.machine["cores"])) for s in on_cpu(sessions, cpu) for r in rounds(s)
             if r.case == case and s.meta["variants"].get(r.variant) == name]
    found = [(n, r) for n, r in found if r.original]
    return found[-1] if found else ("-", None)


def variant_rounds(session: Session, label: str) -> dict[str, Rounds]:
    """The calm rounds of the session's variant whose label starts with `label`, by case."""
    return {r.case: calm(r, session.machine["cores"]) for r in rounds(session)
            if session.meta["variants"].get(r.variant, "").startswith(label)}
