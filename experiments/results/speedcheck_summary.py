"""docs/results/speedcheck_summary.md (`make results`): every round of every speedcheck case, from the records
(experiments/results/speedcheck.py): each process's examples/s, seconds per step, peak RSS, load and step times."""
from __future__ import annotations

from experiments.results import records, speedcheck
from experiments.results.render import table

TEMPLATE = "speedcheck_summary.md"
HEADER = ("round", "implementation", "examples/batch", "s/step", "examples/s", "peak RSS GB", "load before",
          "load after", "each timed step (s)")


def load_text(load: list[float]) -> str:
    """The 1-, 5- and 15-minute load averages as '0.18/0.69/1.23'."""
    return "/".join(f"{x:.2f}" for x in load)


def case_section(session: speedcheck.Session, found: speedcheck.Rounds) -> str:
    """One case of one variant: a row per process, then the per-round ratios."""
    rows = []
    for i, pair in enumerate(zip(found.original, found.project), start=1):
        for r in pair:
            rows.append([f"r{i}", r["impl"], f"{r['examples_per_batch']:.1f}", f"{r['s_per_step']:.2f}",
                         f"{r['examples_per_s']:.2f}", f"{r['peak_rss_gb']:.2f}", load_text(r["load_before"]),
                         load_text(r["load_after"]), " ".join(f"{t:.2f}" for t in r["times"])])
    speed = ", ".join(f"{x:.2f}" for x in found.ratios())
    memory = ", ".join(f"{x:.2f}" for x in found.ratios("peak_rss_gb"))
    title = f"### {session.meta['variants'][found.variant]}: {found.case}"
    return "\n".join([title, "", table(HEADER, rows, "ll" + "r" * 4 + "lll"), "",
                      f"Per round, project / original: examples/s {speed}; peak RSS {memory}.", ""])


def values() -> dict[str, str]:
    """The page's one placeholder: a section per session (its CPU model and bf16 units), a table per case."""
    parts = []
    for session in speedcheck.sessions():
        parts += [f"## {session.name} (commit `{session.meta['commit']}`, {session.meta['utc']} UTC)", "",
                  f"Machine: {records.describe_machine(session.machine)}.", ""]
        parts += [case_section(session, found) for found in speedcheck.rounds(session)]
    return {"sessions": "\n".join(parts).rstrip()}
