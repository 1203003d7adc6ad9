"""docs/results/reliability.md (`make results`): the fault bench's verdicts, from the record that
`python -m bench.faults --record docs/results/records/reliability.json` writes (bench/faults/cli.py). The
tables are those bench/faults prints (bench/faults/tables.py: group_tables, tally)."""
from __future__ import annotations

from bench.faults.tables import cell, counts, group_tables, tally
from experiments.results import records

PAGE = "docs/results/reliability.md"
TEMPLATE = "reliability.md"


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
            "fast_seconds": f"{sum(c['seconds'] for c in fast):.0f}", "fast": str(len(fast)),
            "slow_share": ", most of it the slow tests" if any(c["kind"] == "slow" and c["verdict"] != "not run"
                                                            for c in cases) else "",
            "cases": str(len(cases)), "tally": tally(cases), "tables": group_tables(cases),
            "not_run": not_run(cases), "not_handled": not_handled(cases)}
