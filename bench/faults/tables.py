"""The fault bench's verdicts as Markdown: one table per group headed by its count (group_tables), and "N of M
handled" (tally). `python -m bench.faults` prints them (cli.py); docs/results/reliability.md shows the same
(experiments/results/reliability.py). A case here is a record's case (cli.case_entry): a dict with its group,
name, origin, kind, verdict, evidence and seconds."""
from __future__ import annotations

from bench.faults.case import GROUPS

SHOWN = 150  # characters of evidence in a table cell
WORD = {"handled": "handled", "not handled": "**NOT HANDLED**", "not run": "not run"}


def cell(text: str) -> str:
    """Text fit for a Markdown table cell."""
    return " ".join(str(text).split()).replace("|", "/")


def row(case: dict) -> str:
    """One case's table row: name, where it was found, verdict (slow cases say so), evidence, seconds."""
    evidence = case["evidence"][:SHOWN] + ("..." if len(case["evidence"]) > SHOWN else "")
    verdict = WORD[case["verdict"]] + (" (slow)" if case["kind"] == "slow" else "")
    seconds = f"{case['seconds']:.1f}" if case["verdict"] != "not run" else "-"
    return "| " + " | ".join(cell(c) for c in (case["name"], case["origin"], verdict, evidence, seconds)) + " |"


def counts(cases: list[dict]) -> tuple[int, int, int]:
    """(handled, run, not run) of `cases`."""
    run = [c for c in cases if c["verdict"] != "not run"]
    return sum(c["verdict"] == "handled" for c in run), len(run), len(cases) - len(run)


def group_tables(cases: list[dict]) -> str:
    """One Markdown table per group, headed by its count."""
    parts = []
    for group in GROUPS:
        mine = [c for c in cases if c["group"] == group]
        handled, run, left = counts(mine)
        head = f"### {group}: {handled} of {run} handled" + (f", {left} not run" if left else "")
        parts.append("\n".join([head, "", "| case | found | verdict | evidence | s |", "|---|---|---|---|---:|",
                                *(row(c) for c in mine)]))
    return "\n\n".join(parts)


def tally(cases: list[dict]) -> str:
    """'N of M handled', with the cases not handled and not run counted."""
    handled, run, left = counts(cases)
    text = f"{handled} of {run} cases handled"
    if run - handled:
        text += f" ({run - handled} not handled)"
    return text + (f"; {left} slow cases not run" if left else "")
