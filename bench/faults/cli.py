"""`python -m bench.faults`: run the cases, print one table per group and "N of M handled", and with
`--record FILE` write the record (JSON: command, commit, date, machine, load, minutes, and per case its group,
name, origin, verdict, evidence and seconds) that `make results` turns into docs/results/reliability.md
(experiments/results/reliability.py, which draws the same tables: bench/faults/tables.py); exit 1 if a case
run was not handled."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from bench.faults.case import ROOT, Case, Verdict, run_case, run_slow


EVIDENCE = 300  # characters of evidence kept per case


def case_entry(v: Verdict) -> dict:
    """One case of the record."""
    return {"group": v.case.group, "name": v.case.name, "origin": v.case.origin,
            "kind": "slow" if v.case.slow else "fast", "test": v.case.test, "verdict": v.word,
            "evidence": v.detail[:EVIDENCE] + ("..." if len(v.detail) > EVIDENCE else ""),
            "seconds": round(v.seconds, 2)}


def load_average() -> list[float]:
    """The 1, 5 and 15 minute load averages."""
    return [round(x, 2) for x in os.getloadavg()]


def dirty() -> bool:
    """Whether tracked files differ from the commit (the commit then does not say all that ran)."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                          text=True)
    return bool(done.stdout.strip())


def record(verdicts: list[Verdict], argv: list[str], started: float, load_before: list[float]) -> dict:
    """The record of a run that started at `started` (time.time()) with `load_before`."""
    from bench.record import commit, this_machine

    return {"source": "python -m bench.faults (bench/faults/): each case run and given its verdict",
            "command": " ".join(["python -m bench.faults", *argv]), "commit": commit(), "dirty": dirty(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)), "machine": "this",
            "machines": {"this": this_machine()},
            "load": {"before": load_before, "after": load_average()},
            "minutes": round((time.time() - started) / 60, 2), "cases": [case_entry(v) for v in verdicts]}


def write_record(path: Path, data: dict) -> None:
    """Write the record as indented JSON."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def table(verdicts: list[Verdict]) -> str:
    """The verdicts as Markdown, one table per group, and the counts (as on the results page)."""
    from bench.faults.tables import group_tables, tally

    cases = [case_entry(v) for v in verdicts]
    return f"{group_tables(cases)}\n\n{tally(cases)}"


def not_run(case: Case, fast: bool, skip: list[str]) -> str | None:
    """Why a slow case is left out of this run (--fast, or the --skip text its node holds), or None."""
    if fast:
        return "--fast"
    return next((f"--skip {text}" for text in skip if text in case.test), None)


def main(argv: list[str] | None = None, cases: list[Case] | None = None) -> int:
    """Run `cases` (default: every case), print the tables; 1 if a case run was not handled."""
    from bench.faults import all_cases

    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help="the fast cases only (seconds); list the slow ones")
    parser.add_argument("--skip", action="append", default=[], metavar="TEXT",
                        help="do not run the slow tests whose node contains TEXT (repeatable), e.g. test_dvc_pipeline")
    parser.add_argument("--record", type=Path, metavar="FILE",
                        help="write the verdicts as a record (e.g. docs/results/records/reliability.json)")
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    started, load_before = time.time(), load_average()
    cases = all_cases() if cases is None else cases
    verdicts = {id(c): run_case(c) for c in cases if not c.slow}
    left_out = {id(c): why for c in cases if c.slow and (why := not_run(c, args.fast, args.skip))}
    verdicts.update({id(c): Verdict(c, None, f"{c.test} (not run: {left_out[id(c)]})") for c in cases
                     if id(c) in left_out})
    slow = [c for c in cases if c.slow and id(c) not in left_out]
    if slow:
        verdicts.update({id(v.case): v for v in run_slow(slow)})
    ordered = [verdicts[id(c)] for c in cases]
    print(table(ordered))
    if args.record:
        write_record(args.record, record(ordered, raw, started, load_before))
        print(f"record: {args.record}", file=sys.stderr)
    return 1 if any(v.handled is False for v in ordered) else 0
