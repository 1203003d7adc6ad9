"""docs/results/speed.md (`make results`): this project's MQAN against the original, side by side, from the
speedcheck records (experiments/results/speedcheck.py); issue 44's targets judged from the same figures."""
from __future__ import annotations

from experiments.results import records, speedcheck
from experiments.results.render import table

TEMPLATE = "speed.md"
# issue 44: examples/s against the original (training, decoding), and peak RSS against the original's no higher
# than when the issue was filed: the median of the headline configuration in the session measured then
TARGETS = {"train": 2.0, "decode": 3.0}
RSS_BASELINE = "2026-11-26-fp32"
HEADLINE = "fp32 (the default)"  # the one configuration the headline quotes (a run.json `variants` label)


def ratio(summary: tuple[float, float, float], digits: int = 2, prefix: str = "x") -> str:
    """'x1.46 (1.44-1.48)': the median ratio over rounds and its min-max."""
    med, low, high = summary
    return f"{prefix}{med:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def ratio_table(sessions: list[speedcheck.Session], field: str, prefix: str) -> str:
    """One row per session and variant, one column per case: the median ratio of `field` and its min-max."""
    rows = []
    for s in sessions:
        found = {(r.variant, r.case): r for r in speedcheck.rounds(s)}
        for variant, what in s.meta["variants"].items():
            n = {len(r.original) for (v, _), r in found.items() if v == variant}
            cells = [ratio(found[variant, c].summary(field), prefix=prefix) if (variant, c) in found else "-"
                     for c in speedcheck.CASES]
            rows.append([f"{what}, {s.name}", *cells, "/".join(str(k) for k in sorted(n))])
    return table(["this project's configuration, session", *speedcheck.CASES, "rounds"], rows)


def session_lines(sessions: list[speedcheck.Session]) -> str:
    """What each session was: date, time, commit, machine, CPU units, load, its commands."""
    lines = []
    for s in sessions:
        low, high = speedcheck.loads(s)
        torch = sorted({r["torch"] for r in s.results})
        lines.append(f"- **{s.name}** ({s.meta['date']}, {s.meta['utc']} UTC, commit `{s.meta['commit']}`): "
                     f"{s.meta['what']}. Machine: {records.describe_machine(s.machine)} "
                     f"(units: {', '.join(s.machine['units'])}); torch {', '.join(torch)}; 1-minute load average "
                     f"{low:.2f}-{high:.2f} around the runs. Command"
                     f"{'s' if len(s.meta['commands']) > 1 else ''}, from the project root:")
        lines += ["", *[f"      {c}" for c in s.meta["commands"]], ""]
    return "\n".join(lines).rstrip()


def cpu_of(session: speedcheck.Session) -> str:
    """The CPU model a session ran on."""
    return session.machine["cpu"] or "CPU model not recorded"


def cpus(sessions: list[speedcheck.Session]) -> list[str]:
    """The CPU models the sessions ran on, in the order first measured (targets are judged per CPU model)."""
    return list(dict.fromkeys(cpu_of(s) for s in sessions))


def on_cpu(sessions: list[speedcheck.Session], cpu: str | None) -> list[speedcheck.Session]:
    """The sessions measured on `cpu` (every session for None)."""
    return [s for s in sessions if cpu is None or cpu_of(s) == cpu]


def latest_calm(sessions: list[speedcheck.Session], case: str, name: str = HEADLINE,
                cpu: str | None = None) -> tuple[str, speedcheck.Rounds | None]:
    """The latest session's calm rounds of configuration `name` on `case`, on `cpu` if given (its session name;
    None where none)."""
    found = [(s.name, calm(r, s.machine["cores"])) for s in on_cpu(sessions, cpu) for r in speedcheck.rounds(s)
             if r.case == case and s.meta["variants"].get(r.variant) == name]
    found = [(n, r) for n, r in found if r.original]
    return found[-1] if found else ("-", None)


def targets_table(sessions: list[speedcheck.Session]) -> tuple[str, int, int]:
    """Issue 44's targets against the headline configuration's latest calm rounds on each CPU model: median
    (min-max), met only when every round meets the goal; how many are met, and of how many."""
    rows, met = [], 0
    for cpu in cpus(sessions):
        for case in speedcheck.CASES:
            goal = TARGETS[case.split()[0]]
            who, found = latest_calm(sessions, case, cpu=cpu)
            if found is None:
                continue
            ok = min(found.ratios()) >= goal
            met += ok
            rows.append([f"{case}: examples/s against the original", f">= x{goal:g}", ratio(found.summary()),
                         f"{cpu} ({who})", "met" if ok else "missed"])
        for case in speedcheck.CASES:
            base = [calm(r, s.machine["cores"]) for s in sessions if s.name == RSS_BASELINE
                    for r in speedcheck.rounds(s) if r.case == case and s.meta["variants"].get(r.variant) == HEADLINE]
            who, found = latest_calm(sessions, case, cpu=cpu)
            if not base or not base[0].original or found is None:
                continue  # no baseline recorded for this case (no memory target), or no run on this CPU
            goal = base[0].summary("peak_rss_gb")[0]
            ok = max(found.ratios("peak_rss_gb")) <= goal
            met += ok
            rows.append([f"{case}: peak RSS against the original", f"<= {goal:.2f} ({RSS_BASELINE})",
                         ratio(found.summary("peak_rss_gb"), prefix=""), f"{cpu} ({who})", "met" if ok else "missed"])
    return table(["target (issue 44)", "goal", "measured: median (min-max)", f"{HEADLINE} on: CPU (session)", ""],
                 rows, "llrll"), met, len(rows)


def params(sessions: list[speedcheck.Session], impl: str) -> str:
    """The trainable parameter count the records give for `impl` (one figure, or each that differs)."""
    found = sorted({r["trainable_params"] for s in sessions for r in s.results if r["impl"] == impl})
    return ", ".join(f"{n:,}" for n in found)


def calm(found: speedcheck.Rounds, cores: int) -> speedcheck.Rounds:
    """`found` without the rounds in which a process's 1-minute load average, before or after, exceeded the
    machine's cores."""
    def within(r: dict) -> bool:
        return max(r["load_before"][0], r["load_after"][0]) <= cores

    kept = [(o, p) for o, p in zip(found.original, found.project) if within(o) and within(p)]
    return speedcheck.Rounds(found.variant, found.case, [o for o, _ in kept], [p for _, p in kept])


def headline(sessions: list[speedcheck.Session], case: str, name: str = HEADLINE, cpu: str | None = None) -> str:
    """The median examples/s ratio (min-max) of configuration `name` on `case` over its calm rounds, from the
    latest session that measured it (on `cpu` if given; '-' where none)."""
    _, found = latest_calm(sessions, case, name, cpu)
    if found is None:
        return f"{case} -"
    n = len(found.original)
    return f"{case} {ratio(found.summary())} over {n} round{'' if n == 1 else 's'}"


def in_short(sessions: list[speedcheck.Session]) -> str:
    """One sentence for the README's index: the headline configuration's median ratio of each case, on each
    CPU model measured."""
    parts = "; ".join(f"on {cpu}: " + ", ".join(headline(sessions, case, cpu=cpu) for case in speedcheck.CASES)
                      for cpu in cpus(sessions))
    return (f"examples/s against the original, {HEADLINE}, median (min-max) over the rounds whose load stayed "
            f"within the cores, the latest session on each CPU: {parts}")


def values() -> dict[str, str]:
    """The page's placeholders, from the speedcheck records."""
    sessions = speedcheck.sessions()
    targets, met, total = targets_table(sessions)
    return {
        "sessions": session_lines(sessions),
        "speed_table": ratio_table(sessions, "examples_per_s", "x"),
        "memory_table": ratio_table(sessions, "peak_rss_gb", ""),
        "targets_table": targets,
        "targets_met": f"{met} of {total}",
        "in_short": in_short(sessions),
        "project_params": params(sessions, "project"),
        "original_params": params(sessions, "original"),
    }
