"""How a headline session's machine ran against the session before it on the same CPU model (docs/results/
speed.md's "The headline's sessions"): the original's code does not change, so its examples/s between sessions
show the machine's own speed moving, beside the 15-minute load the 1-minute calm rule does not see."""
from __future__ import annotations

import statistics

from experiments.results import speedcheck
from experiments.results.speedcheck import HEADLINE, calm, cpu_of, cpus, latest_calm, ratio, variant_rounds

WITHIN = "within the rounds' spread"


def load15(session: speedcheck.Session) -> float:
    """The 15-minute load average before the session's first process."""
    return session.results[0]["load_before"][2]


def load15_said(session: speedcheck.Session) -> str:
    """'15-minute load 2.34 at the start, above the 2 cores' (or 'within')."""
    cores = session.machine["cores"]
    where = "above" if load15(session) > cores else "within"
    return f"15-minute load {load15(session):.2f} at the start, {where} the {cores} cores"


def rates(session: speedcheck.Session, case: str, impl: str = "original", headline: bool = False) -> list[float]:
    """`impl`'s examples/s on `case` over the session's calm rounds: the original's in every variant (its code
    and settings are the same in each; the session line's figure), this project's, and with `headline` the
    original's too, in the headline configuration."""
    found = [r for r in speedcheck.rounds(session) if r.case == case
             and (impl == "original" and not headline or session.meta["variants"].get(r.variant) == HEADLINE)]
    return [x["examples_per_s"] for r in found for x in getattr(calm(r, session.machine["cores"]), impl)]


def paired_rates(session: speedcheck.Session, case: str) -> list[float]:
    """The original's examples/s on `case` in the rounds the headline's ratio is made of: the headline
    configuration's calm rounds where the session ran them (so that the original's drift and the ratio's move
    agree), else every variant's (a session without the headline configuration)."""
    return rates(session, case, headline=True) or rates(session, case)


def pooled(sessions: list[speedcheck.Session]) -> bool:
    """Whether any of `sessions` ran more than one variant (its original's rounds pooled over them: rates())."""
    return any(len(s.meta["variants"]) > 1 for s in sessions)


def before(sessions: list[speedcheck.Session], session: speedcheck.Session, case: str,
           impl: str = "original") -> list[speedcheck.Session]:
    """The sessions before `session` on its CPU model with calm rounds of `impl` on `case` (rates()), oldest first."""
    earlier = sessions[:[s.name for s in sessions].index(session.name)]
    return [s for s in earlier if cpu_of(s) == cpu_of(session) and rates(s, case, impl)]


def spread(values: list[float]) -> str:
    """'6.75 (6.65-7.20)': median (min-max)."""
    return f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})"


def shift(a: list[float], b: list[float]) -> str:
    """How the rounds `a` stand to the rounds `b`: lower or higher in every round, or within each other's spread."""
    return ("lower in every round" if max(a) < min(b) else "higher in every round" if min(a) > max(b)
            else WITHIN)


def span(low: float, high: float) -> str:
    """'x0.77-0.86', or 'x0.95' where the two agree at 2 decimals."""
    return f"x{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"x{low:.2f}-{high:.2f}"


def moved(a: list[float], b: list[float]) -> float:
    """The ratio of the medians, a / b."""
    return statistics.median(a) / statistics.median(b)


def original_said(sessions: list[speedcheck.Session], session: speedcheck.Session) -> str:
    """Per case, the original's examples/s in `session` against the session before it on its CPU that ran the case,
    over every variant's rounds of each (rates()), said where a session ran more than one."""
    parts, seen = [], [session]
    for case in speedcheck.CASES:
        a, prev = rates(session, case), before(sessions, session, case)
        if not a:
            continue
        if not prev:
            parts.append(f"{case} {spread(a)}, the first session on this CPU")
            continue
        b = rates(prev[-1], case)
        seen.append(prev[-1])
        parts.append(f"{case} {spread(a)} against {spread(b)} in {prev[-1].name}, x{moved(a, b):.2f}, {shift(a, b)}")
    if parts and pooled(seen):
        parts.append("the rounds of each session's variants pooled (the original's code and settings are the same "
                     "in each)")
    return "; ".join(parts) or "no calm round"


def headline_sessions(sessions: list[speedcheck.Session], cpu: str) -> dict[str, list[str]]:
    """{session name: the cases whose headline on `cpu` comes from it} (latest_calm())."""
    found: dict[str, list[str]] = {}
    for case in speedcheck.CASES:
        who, rounds = latest_calm(sessions, case, cpu=cpu)
        if rounds is not None:
            found.setdefault(who, []).append(case)
    return found


def drift(sessions: list[speedcheck.Session], session: speedcheck.Session, case: str) -> dict | None:
    """How `session` ran `case` against the previous session on its CPU with the headline configuration: the
    original's and this project's median examples/s ratios, the original's shift(), the original's ratios against
    every earlier session on the CPU, and the two sessions' headline ratios (None where no earlier session). The
    original's figures are over the rounds of the headline's ratio (paired_rates), so that the ratio moves as
    the project's figure over the original's does."""
    prev = before(sessions, session, case, "project")
    if not prev:
        return None
    ref, a = prev[-1], paired_rates(session, case)
    earlier = [moved(a, paired_rates(s, case)) for s in before(sessions, session, case)]
    return {"ref": ref, "original": moved(a, paired_rates(ref, case)), "shift": shift(a, paired_rates(ref, case)),
            "project": moved(rates(session, case, "project"), rates(ref, case, "project")),
            "earlier": (min(earlier), max(earlier), len(earlier)),
            "now": variant_rounds(session, HEADLINE)[case], "then": variant_rounds(ref, HEADLINE)[case]}


def flagged(sessions: list[speedcheck.Session], session: speedcheck.Session, cases: list[str]) -> bool:
    """Whether the original ran outside the rounds' spread of the session before, or the 15-minute load at the
    start exceeded the cores (what the 1-minute calm rule does not see)."""
    found = [drift(sessions, session, c) for c in cases]
    return load15(session) > session.machine["cores"] or any(d and d["shift"] != WITHIN for d in found)


def flagged_said(sessions: list[speedcheck.Session], cpu: str) -> str:
    """' (in 2026-11-29-fp32-fused the unchanged original ran x0.78-0.83 of its examples/s in the session before:
    see below)' for each headline session on `cpu` that flagged() marks; '' where none."""
    parts = []
    for name, cases in headline_sessions(sessions, cpu).items():
        session = next(s for s in sessions if s.name == name)
        found = [d for d in (drift(sessions, session, c) for c in cases) if d]
        if found and flagged(sessions, session, cases):
            by_ref: dict[str, list[float]] = {}
            for d in found:  # each case against the session before that measured it
                by_ref.setdefault(d["ref"].name, []).append(d["original"])
            who = "it" if parts else "the unchanged original"
            parts.append(f"in {name} {who} ran " + " and ".join(f"{span(min(v), max(v))} of its examples/s in {ref}"
                                                                for ref, v in by_ref.items()))
    return f" ({'; '.join(parts)}: see 'The headline's sessions')" if parts else ""


def moved_note(sessions: list[speedcheck.Session]) -> str:
    """Per CPU model, each session the headline comes from against the session before it with the headline
    configuration: how fast the original (its code unchanged) and this project ran there, and the 15-minute load."""
    notes = []
    for cpu in cpus(sessions):
        for name, cases in headline_sessions(sessions, cpu).items():
            session = next(s for s in sessions if s.name == name)
            notes.append(session_moved(sessions, session, cases))
    return "\n".join(f"- {n}" for n in notes)


def session_moved(sessions: list[speedcheck.Session], session: speedcheck.Session, cases: list[str]) -> str:
    """One headline session: its cases against the session before (drift()), and what that says of the headline."""
    head = f"**{session.name}** ({cpu_of(session)}: {', '.join(cases)}; {load15_said(session)})"
    parts = []
    for case in cases:
        d = drift(sessions, session, case)
        if d is None:
            parts.append(f"{case}: no earlier session with {HEADLINE} on this CPU")
            continue
        low, high, n = d["earlier"]
        parts.append(f"{case}: against {d['ref'].name}, the original ran x{d['original']:.2f} of its examples/s "
                     f"there ({d['shift']}; {span(low, high)} of the {n} earlier session{'s' * (n != 1)} on "
                     f"this CPU) and this project x{d['project']:.2f}; the ratio {ratio(d['now'].summary())} against "
                     f"{ratio(d['then'].summary())} there")
    text = f"{head}: {'; '.join(parts)}."
    if not flagged(sessions, session, cases):
        return text + " The original ran within the rounds' spread of the session before."
    return (text + " The machine's own speed moved between the sessions, beyond the rounds' spread or with a "
            "15-minute load above the cores, which the 1-minute calm rule does not see; the code moved too "
            f"(commit {session.meta['commit']}), and the records cannot tell the two apart. The headline still "
            "comes from the latest session, by this page's rule.")
