"""docs/results/reliability.md (`make results`): the fault bench's verdicts, from the record that
`python -m pytest tests -m fault --fault-record docs/results/records/reliability.json` writes (tests/faults/record.py):
a table per group headed by its count (group_tables), "N of M handled" (tally), the cases not handled and not
run named. A case of the record is a dict with its group, name, origin, kind, test, verdict, evidence and
seconds."""
from __future__ import annotations

from experiments.results import records

PAGE = "docs/results/reliability.md"
TEMPLATE = "reliability.md"
GROUPS = ("bad input", "fault", "load")  # the page's groups, in its order; a fault test's mark names one
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
    return text + (f"; {left} cases not run" if left else "")


def tests_of(cases: list[dict]) -> str:
    """How many tests the cases come from, and which tests carry more than one case (each such case shows its
    test's whole time)."""
    by_test: dict[str, list[dict]] = {}
    for c in cases:
        by_test.setdefault(c["test"] or c["name"], []).append(c)
    shared = [(t, found) for t, found in by_test.items() if len(found) > 1]
    text = f"{len(cases)} case{'s' * (len(cases) != 1)} from {len(by_test)} test{'s' * (len(by_test) != 1)}"
    if shared:
        text += "; " + "; ".join(f"{len(found)} cases are one test (`{t}`), each showing its "
                                 f"{found[0]['seconds']:.1f} s" for t, found in shared)
    return text


def seconds(cases: list[dict]) -> float:
    """The time of the tests behind `cases`, each test once."""
    return sum({c["test"] or c["name"]: c["seconds"] for c in cases}.values())


def not_run(cases: list[dict]) -> str:
    """A line per case not run, saying why."""
    lines = [f"  - {c['name']}: {cell(c['evidence'])}" for c in cases if c["verdict"] == "not run"]
    return "\n".join(lines) if lines else "  - nothing: every case ran."


def not_handled(cases: list[dict]) -> str:
    """A line per case not handled, with what happened instead."""
    lines = [f"- **{c['name']}** ({c['origin']}): {cell(c['evidence'])}" for c in cases
             if c["verdict"] == "not handled"]
    return "\n".join(lines) if lines else "None: every case that ran was handled."


def values(record: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/reliability.md (and the README index line)."""
    record = record or records.load("reliability")
    cases = record["cases"]
    machine = records.describe_machine(record["machines"][record["machine"]])
    fast = [c for c in cases if c["kind"] == "fast" and c["verdict"] != "not run"]
    return {"command": record["command"], "date": record["date"],
            "commit": record["commit"] + (" with uncommitted changes" if record.get("dirty") else ""),
            "machine": machine, "minutes": f"{record['minutes']:.1f}",
            "load_before": ", ".join(f"{x:g}" for x in record["load"]["before"]),
            "load_after": ", ".join(f"{x:g}" for x in record["load"]["after"]),
            "fast_seconds": f"{seconds(fast):.0f}", "fast": str(len(fast)),
            "slow_share": ", most of it the slow tests" if any(c["kind"] == "slow" and c["verdict"] != "not run"
                                                            for c in cases) else "",
            "cases": tests_of(cases), "tally": tally(cases), "tables": group_tables(cases),
            "not_run": not_run(cases), "not_handled": not_handled(cases), "provenance": provenance(record)}


def provenance(record: dict) -> str:
    """Where the rows come from when this command did not make them (`converted_from`: the command and commit
    whose rows the record keeps), else nothing."""
    found = record.get("converted_from")
    if not found:
        return ""
    return (f"\n- **Converted:** these rows are those of `{found['command']}` at commit `{found['commit']}` (the "
            f"date, machine, load and minutes above are that run's), carried over when its cases became these tests "
            f"without changing what they check; the command above has not yet been run over all of them, and "
            f"its next run replaces the record.")
