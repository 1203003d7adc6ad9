"""docs/results/speed.md (`make results`): this project's MQAN against the original, side by side, from the
speedcheck records (experiments/results/speedcheck.py); issue 44's targets judged from the same figures."""
from __future__ import annotations

import re
import statistics
from pathlib import Path

from experiments.results import records, speedcheck
from experiments.results.render import table

TEMPLATE = "speed.md"
# issue 44: examples/s against the original (training, decoding), and peak RSS against the original's no higher
# than when the issue was filed: the median of the headline configuration in the session measured then
TARGETS = {"train": 2.0, "decode": 3.0}
RSS_BASELINE = "2026-11-26-fp32"
HEADLINE = "fp32 (the default)"  # the one configuration the headline quotes (a run.json `variants` label)
TRIED = ("2026-11-29-fp32-narrow", "2026-11-29-fp32")  # a change tried and reverted, and the session it is set against
WORDS = {"examples_per_s": ("examples/s", "faster", "slower"), "peak_rss_gb": ("peak RSS", "higher", "lower")}
WITHIN = "within the rounds' spread"
NOT_SHOWN = "not shown: within the baseline's spread"  # a peak-RSS verdict the baseline's own rounds cannot settle
PROFILES = records.RESULTS / "profiles" / "intel_xeon"  # bench.cpu_profile, fp32/ and bf16/ (Intel Xeon with AMX)
MATMUL = ("aten::mm", "aten::addmm", "aten::bmm")


def ratio(summary: tuple[float, float, float], digits: int = 2, prefix: str = "x") -> str:
    """'x1.46 (1.44-1.48)': the median ratio over rounds and its min-max."""
    med, low, high = summary
    return f"{prefix}{med:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def cell(found: speedcheck.Rounds, cores: int, field: str, prefix: str) -> str:
    """`field`'s ratio over the calm rounds (calm()), saying how many of the rounds were calm when not all."""
    kept, n = calm(found, cores), len(found.original)
    if not kept.original:
        return f"no calm round (0 of {n})"
    text = ratio(kept.summary(field), prefix=prefix)
    k = len(kept.original)
    return text if k == n else f"{text}, {k} of {n} rounds calm"


def ratio_table(sessions: list[speedcheck.Session], field: str, prefix: str) -> str:
    """One row per session and variant, one column per case: the median ratio of `field` over the calm rounds
    and its min-max (a cell says how many of its rounds were calm when not all)."""
    rows = []
    for s in sessions:
        found = {(r.variant, r.case): r for r in speedcheck.rounds(s)}
        for variant, what in s.meta["variants"].items():
            n = {len(r.original) for (v, _), r in found.items() if v == variant}
            cells = [cell(found[variant, c], s.machine["cores"], field, prefix) if (variant, c) in found else "-"
                     for c in speedcheck.CASES]
            rows.append([f"{what}, {s.name}", cpu_units(s), *cells, "/".join(str(k) for k in sorted(n))])
    return table(["this project's configuration, session", "CPU (bf16 units)", *speedcheck.CASES, "rounds"], rows,
                 "ll" + "r" * (len(speedcheck.CASES) + 1))


def cpu_units(session: speedcheck.Session) -> str:
    """'Intel(R) Xeon(R) Processor (avx512_bf16, amx_bf16, amx_tile, amx_int8)': the CPU model and its bf16 units."""
    return f"{cpu_of(session)} ({records.unit_names(session.machine)})"


def session_lines(sessions: list[speedcheck.Session]) -> str:
    """What each session was: date, time, commit, machine and its bf16 units, load, how fast the original ran
    against the session before on its CPU, its commands."""
    lines = []
    for s in sessions:
        low, high = speedcheck.loads(s)
        torch = sorted({r["torch"] for r in s.results})
        lines.append(f"- **{s.name}** ({s.meta['date']}, {s.meta['utc']} UTC, commit `{s.meta['commit']}`): "
                     f"{s.meta['what']}. Machine: {records.describe_machine(s.machine)}; torch {', '.join(torch)}; "
                     f"1-minute load average {low:.2f}-{high:.2f} around the runs, {load15_said(s)}. The original's "
                     f"examples/s (its code unchanged), median (min-max) over the calm rounds: "
                     f"{original_said(sessions, s)}. Command{'s' if len(s.meta['commands']) > 1 else ''}, "
                     f"from the project root:")
        lines += ["", *[f"      {c}" for c in s.meta["commands"]], ""]
    return "\n".join(lines).rstrip()


def load15(session: speedcheck.Session) -> float:
    """The 15-minute load average before the session's first process."""
    return session.results[0]["load_before"][2]


def load15_said(session: speedcheck.Session) -> str:
    """'15-minute load 2.34 at the start, above the 2 cores' (or 'within')."""
    cores = session.machine["cores"]
    where = "above" if load15(session) > cores else "within"
    return f"15-minute load {load15(session):.2f} at the start, {where} the {cores} cores"


def rates(session: speedcheck.Session, case: str, impl: str = "original") -> list[float]:
    """`impl`'s examples/s on `case` over the session's calm rounds: the original's in every variant (its code
    and settings are the same in each), this project's in the headline configuration."""
    found = [r for r in speedcheck.rounds(session) if r.case == case
             and (impl == "original" or session.meta["variants"].get(r.variant) == HEADLINE)]
    return [x["examples_per_s"] for r in found for x in getattr(calm(r, session.machine["cores"]), impl)]


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
    """Per case, the original's examples/s in `session` against the session before it on its CPU that ran the case."""
    parts = []
    for case in speedcheck.CASES:
        a, prev = rates(session, case), before(sessions, session, case)
        if not a:
            continue
        if not prev:
            parts.append(f"{case} {spread(a)}, the first session on this CPU")
            continue
        b = rates(prev[-1], case)
        parts.append(f"{case} {spread(a)} against {spread(b)} in {prev[-1].name}, x{moved(a, b):.2f}, {shift(a, b)}")
    return "; ".join(parts) or "no calm round"


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


def targets_table(sessions: list[speedcheck.Session]) -> tuple[str, list[str]]:
    """Issue 44's targets against the headline configuration's latest calm rounds on each CPU model: median
    (min-max) and a verdict per target (speed: met only when every round meets the goal; peak RSS: rss_verdict())."""
    rows = []
    for cpu in cpus(sessions):
        rows += speed_rows(sessions, cpu) + rss_rows(sessions, cpu)
    text = table(["target (issue 44)", "goal", "measured: median (min-max)",
                  f"{HEADLINE} on: CPU (bf16 units), session", ""], rows, "llrll")
    return text, [row[-1] for row in rows]


def speed_rows(sessions: list[speedcheck.Session], cpu: str) -> list[list[str]]:
    """The examples/s targets on `cpu`: met only when every calm round of the latest session meets the goal."""
    rows = []
    for case in speedcheck.CASES:
        goal = TARGETS[case.split()[0]]
        who, found = latest_calm(sessions, case, cpu=cpu)
        if found is None:
            continue
        rows.append([f"{case}: examples/s against the original", f">= x{goal:g}", over(found, ratio(found.summary())),
                     where(sessions, who), "met" if min(found.ratios()) >= goal else "missed"])
    return rows


def rss_rows(sessions: list[speedcheck.Session], cpu: str) -> list[list[str]]:
    """The peak-RSS targets on `cpu`: the goal is the baseline session's median with its min-max (rss_verdict())."""
    rows = []
    for case in speedcheck.CASES:
        base = [calm(r, s.machine["cores"]) for s in sessions if s.name == RSS_BASELINE
                for r in speedcheck.rounds(s) if r.case == case and s.meta["variants"].get(r.variant) == HEADLINE]
        who, found = latest_calm(sessions, case, cpu=cpu)
        if not base or not base[0].original or found is None:
            continue  # no baseline recorded for this case (no memory target), or no run on this CPU
        goal = ratio(base[0].summary("peak_rss_gb"), prefix="")
        rows.append([f"{case}: peak RSS against the original", f"<= {goal}, {RSS_BASELINE}",
                     over(found, ratio(found.summary("peak_rss_gb"), prefix="")), where(sessions, who),
                     rss_verdict(found, base[0])])
    return rows


def rss_verdict(found: speedcheck.Rounds, base: speedcheck.Rounds) -> str:
    """'met' where every round lies below the baseline's lowest round, 'missed' where every round lies above its
    highest, else NOT_SHOWN (the rounds overlap the baseline's own: its round-to-round spread cannot tell them
    apart from the goal); at the page's 2 decimals."""
    (_, low, high), (_, b_low, b_high) = (tuple(round(x, 2) for x in r.summary("peak_rss_gb")) for r in (found, base))
    return "met" if high < b_low else "missed" if low > b_high else NOT_SHOWN


def where(sessions: list[speedcheck.Session], name: str) -> str:
    """'Intel(R) Xeon(R) Processor (avx512_bf16, ...), 2026-11-29-fp32-fused': the session's CPU, units and name."""
    session = next(s for s in sessions if s.name == name)
    return f"{cpu_units(session)}, {name}"


def tally(verdicts: list[str]) -> str:
    """'2 of 16 (2 others not shown: ...)': the targets met, of how many, and how many the noise leaves open."""
    unshown = verdicts.count(NOT_SHOWN)
    said = f"{verdicts.count('met')} of {len(verdicts)}"
    return said + (f" ({unshown} other{'s' if unshown != 1 else ''} not shown: peak RSS within the baseline "
                   f"session's own round-to-round spread)" if unshown else "")


def over(found: speedcheck.Rounds, text: str) -> str:
    """`text` with the number of rounds it is over."""
    n = len(found.original)
    return f"{text} over {n} round{'' if n == 1 else 's'}"


def rss_note(sessions: list[speedcheck.Session]) -> str:
    """Which CPU the peak-RSS goal was measured on, and which CPUs are judged against it without their own."""
    base = next((s for s in sessions if s.name == RSS_BASELINE), None)
    if base is None:
        return ""
    others = [c for c in cpus(sessions) if c != cpu_of(base)]
    text = (f"The peak-RSS goal is the median of {RSS_BASELINE}, the session measured when the issue was filed, "
            f"on the {cpu_of(base)}")
    if not others:
        return text + "."
    return (text + f"; no session on the {' or the '.join(others)} predates the issue, so "
            f"{'its' if len(others) == 1 else 'their'} peak RSS is judged against that {cpu_of(base)} baseline.")


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
    CPU model measured, and where a headline session's machine ran the original at another speed (moved_note)."""
    parts = "; ".join(f"on {cpu}: " + ", ".join(headline(sessions, case, cpu=cpu) for case in speedcheck.CASES)
                      + flagged_said(sessions, cpu) for cpu in cpus(sessions))
    return (f"examples/s against the original, {HEADLINE}, median (min-max) over the rounds whose load stayed "
            f"within the cores, from the latest session that measured each case on each CPU: {parts}")


def against(a: speedcheck.Rounds, b: speedcheck.Rounds, field: str) -> str:
    """How `a`'s rounds of `field` stand to `b`'s (calm rounds each): '<higher/lower> in every round' only where
    their min-max ranges do not overlap."""
    name = WORDS[field][0]
    if not a.original or not b.original:
        return f"{name}: no calm rounds to compare"
    prefix = "x" if field == "examples_per_s" else ""
    return (f"{name} {ratio(a.summary(field), prefix=prefix)} against {ratio(b.summary(field), prefix=prefix)}, "
            f"{standing(a, b, field)}")


def standing(a: speedcheck.Rounds, b: speedcheck.Rounds, field: str) -> str:
    """'faster/slower (higher/lower) in every round' where `a`'s and `b`'s min-max ranges of `field` do not
    overlap as the page prints them (2 decimals), else 'not distinguishable (the rounds overlap)'."""
    _, up, down = WORDS[field]
    (_, a_low, a_high), (_, b_low, b_high) = (tuple(round(x, 2) for x in r.summary(field)) for r in (a, b))
    return (f"{up} in every round" if a_low > b_high else f"{down} in every round" if a_high < b_low
            else "not distinguishable (the rounds overlap)")


def variant_rounds(session: speedcheck.Session, label: str) -> dict[str, speedcheck.Rounds]:
    """The calm rounds of the session's variant whose label starts with `label`, by case."""
    return {r.case: calm(r, session.machine["cores"]) for r in speedcheck.rounds(session)
            if session.meta["variants"].get(r.variant, "").startswith(label)}


def compared(a: dict[str, speedcheck.Rounds], b: dict[str, speedcheck.Rounds], fields: tuple[str, ...]) -> str:
    """'case: <field comparison>, ...' for every case both measured."""
    return "; ".join(f"{case}: " + ", ".join(against(a[case], b[case], f) for f in fields)
                     for case in speedcheck.CASES if case in a and case in b)


def bf16_session(sessions: list[speedcheck.Session]) -> speedcheck.Session | None:
    """The latest session that measured bf16 beside the headline fp32 configuration."""
    both = [s for s in sessions if HEADLINE in s.meta["variants"].values()
            and any(v.startswith("bf16") for v in s.meta["variants"].values())]
    return both[-1] if both else None


def bf16_standing(session: speedcheck.Session) -> dict[str, str]:
    """Per case, bf16's examples/s against fp32's in `session` (calm rounds): standing()'s words."""
    bf16, fp32 = variant_rounds(session, "bf16"), variant_rounds(session, HEADLINE)
    return {c: standing(bf16[c], fp32[c], "examples_per_s") if bf16[c].original and fp32[c].original
            else "no calm rounds to compare" for c in speedcheck.CASES if c in bf16 and c in fp32}


def bf16_note(sessions: list[speedcheck.Session]) -> str:
    """bf16 against fp32 in the latest session that measured both, case by case, from the calm rounds."""
    s = bf16_session(sessions)
    if s is None:
        return "no session measured bf16 beside fp32"
    return (f"in {s.name}, on an {cpu_units(s)}, each against the original, "
            f"bf16 first and fp32 of the same session second: "
            f"{compared(variant_rounds(s, 'bf16'), variant_rounds(s, HEADLINE), ('examples_per_s',))}")


def tried_note(sessions: list[speedcheck.Session]) -> str:
    """The tried-and-reverted session against the one it is set against, speed and peak RSS, calm rounds."""
    found = {s.name: s for s in sessions}
    if not all(name in found for name in TRIED):
        return "its sessions are not recorded"
    tried, base = (found[name] for name in TRIED)
    return (f"against {base.name}'s rounds, "
            f"{compared(variant_rounds(tried, ''), variant_rounds(base, HEADLINE), tuple(WORDS))}")


def rounds_said(found: list[tuple[speedcheck.Session, speedcheck.Rounds]]) -> str:
    """'2 rounds (2 cases each), none calm': the rounds of a variant's sessions (a round runs each of the
    session's cases once) and how many of its case runs were calm."""
    by_session: dict[str, list[speedcheck.Rounds]] = {}
    for s, r in found:
        by_session.setdefault(s.name, []).append(r)
    rounds = sum(max(len(r.original) for r in rs) for rs in by_session.values())
    cases = {len(rs) for rs in by_session.values()}
    n = sum(len(r.original) for _, r in found)
    k = sum(len(calm(r, s.machine["cores"]).original) for s, r in found)
    shape = (f"{next(iter(cases))} case{'' if cases == {1} else 's'} each" if len(cases) == 1
             else f"{n} case runs")
    calm_said = "none calm" if k == 0 else "all calm" if k == n else f"{k} of its {n} case runs calm"
    return f"{rounds} round{'' if rounds == 1 else 's'} ({shape}), {calm_said}"


def int8_note(sessions: list[speedcheck.Session]) -> str:
    """Where int8 W_v was measured (which CPUs, with or without bf16 units), in how many rounds, and how many of
    its case runs were calm."""
    found = [(s, r) for s in sessions for r in speedcheck.rounds(s)
             if s.meta["variants"].get(r.variant, "").startswith("int8")]
    if not found:
        return "int8 was not measured"
    where = list(dict.fromkeys(cpu_of(s) for s, _ in found))
    units = {s.machine["bf16_units"] for s, _ in found}
    k = sum(len(calm(r, s.machine["cores"]).original) for s, r in found)
    said = ("only on CPUs with bf16 units" if units == {True} else "only on CPUs without bf16 units"
            if units == {False} else "on CPUs with and without bf16 units")
    unknown = "; its speed on a CPU without them is unknown" if units == {True} else ""
    return (f"int8 W_v was measured {said} ({', '.join(where)}), in {rounds_said(found)}"
            + (", so no int8 speed is quoted here" if k == 0 else "") + unknown)


def values() -> dict[str, str]:
    """The page's placeholders, from the speedcheck records and the Intel Xeon's profiles."""
    sessions = speedcheck.sessions()
    targets, verdicts = targets_table(sessions)
    fp32, bf16 = (profile(PROFILES / p / "cpu_train.txt") for p in ("fp32", "bf16"))
    return {
        "sessions": session_lines(sessions),
        "speed_table": ratio_table(sessions, "examples_per_s", "x"),
        "memory_table": ratio_table(sessions, "peak_rss_gb", ""),
        "targets_table": targets,
        "targets_met": tally(verdicts),
        "moved_note": moved_note(sessions),
        "train_timing": timing(sessions, "train"),
        "decode_timing": timing(sessions, "decode"),
        "bf16_profile": bf16_profile(sessions, fp32, bf16),
        "dropout_share": dropout_share(fp32),
        "rss_note": rss_note(sessions),
        "bf16_note": bf16_note(sessions),
        "tried_note": tried_note(sessions),
        "int8_note": int8_note(sessions),
        "in_short": in_short(sessions),
        "project_params": params(sessions, "project"),
        "original_params": params(sessions, "original"),
    }


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
    every earlier session on the CPU, and the two sessions' headline ratios (None where no earlier session)."""
    prev = before(sessions, session, case, "project")
    if not prev:
        return None
    ref, a = prev[-1], rates(session, case)
    earlier = [moved(a, rates(s, case)) for s in before(sessions, session, case)]
    return {"ref": ref, "original": moved(a, rates(ref, case)), "shift": shift(a, rates(ref, case)),
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
            low, high = min(d["original"] for d in found), max(d["original"] for d in found)
            who = "it" if parts else "the unchanged original"
            parts.append(f"in {name} {who} ran {span(low, high)} of its examples/s in {found[0]['ref'].name}")
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


def timing(sessions: list[speedcheck.Session], mode: str) -> str:
    """How the records' `mode` processes ran: '2 warm-up steps, then 8 timed', or for decoding '256 examples, 50
    forced steps (1 warm-up decoding, then 2 timed)' (each variant found, joined)."""
    found = []
    for r in (r for s in sessions for r in s.results if r["mode"] == mode):
        n = len(r["times"])
        if mode == "train":
            w = r["warmup_steps"]
            said = f"{w} warm-up step{'s' * (w != 1)}, then {n} timed"
        else:
            w, size = r["warmup_decodes"], r["examples_per_batch"]
            said = (f"{size:g} examples, {r['decode_steps']} forced steps ({w} warm-up decoding{'s' * (w != 1)}, "
                    f"then {n} timed)")
        found.append(said)
    return " or ".join(dict.fromkeys(found))


def ms(value: str, unit: str) -> float:
    """A profiler's time in milliseconds."""
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def profile(path: Path) -> dict:
    """A bench.cpu_profile text: its header lines (command, commit, date, cpu, load) and per training step's task
    the operators' self CPU (share %, ms) and the step's self CPU total (ms)."""
    head, steps, task = {}, {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if task is None and not line.startswith("##") and ": " in line:
            key, value = line.split(": ", 1)
            head[key] = value
        if m := re.match(r"## training step, (\w+):", line):
            task = m.group(1)
            steps[task] = {"ops": {}, "total": None}
        elif task and (m := re.match(r"\s*(aten::\S+)\s+([\d.]+)%\s+([\d.]+)(us|ms|s)\s", line)):
            steps[task]["ops"][m.group(1)] = (float(m.group(2)), ms(m.group(3), m.group(4)))
        elif task and (m := re.match(r"Self CPU time total: ([\d.]+)(us|ms|s)", line)):
            steps[task]["total"] = ms(m.group(1), m.group(2))
    return {"head": head, "steps": steps, "path": path}


def profile_said(found: dict) -> str:
    """'at commit e0ec75b, 1-minute load 1.26-1.46': where a profile was taken."""
    loads = [float(x) for x in re.findall(r"\[([\d.]+),", found["head"].get("load before", ""))]
    return f"commit {found['head']['commit']}" + (f", 1-minute load {min(loads):.2f}-{max(loads):.2f}" if loads else "")


def bf16_profile(sessions: list[speedcheck.Session], fp32: dict, bf16: dict) -> str:
    """An SST-shaped training step's matrix products and copies, bf16 against fp32, from the two profiles."""
    a, b = fp32["steps"]["sst"], bf16["steps"]["sst"]
    commit = fp32["head"]["commit"]
    code = next((f"the model code of {s.name}" for s in sessions if s.meta["commit"] == commit), "no session's code")
    each = ", ".join(f"{op.split('::')[1]} {a['ops'][op][1]:.1f} -> {b['ops'][op][1]:.1f}" for op in MATMUL)
    cpu = fp32["head"]["cpu"].split(",")[0]
    return (f"Profiled on the {cpu} ([profiles/intel_xeon/](profiles/intel_xeon/), fp32 and `--precision bf16`, one "
            f"run each; fp32 at {profile_said(fp32)}, bf16 at {profile_said(bf16)}: {code}), an SST-shaped training "
            f"step's matrix products took {sum(b['ops'][op][1] for op in MATMUL):.1f} ms of self CPU in bf16 "
            f"against {sum(a['ops'][op][1] for op in MATMUL):.1f} ms in fp32 (ms, fp32 -> bf16: {each}), its "
            f"copies (`copy_`, the casts among them) {b['ops']['aten::copy_'][1]:.1f} ms against "
            f"{a['ops']['aten::copy_'][1]:.1f}, and the whole step {b['total'] / 1e3:.3f} s against "
            f"{a['total'] / 1e3:.3f} s")


def dropout_share(fp32: dict) -> str:
    """The share of `bernoulli_` (dropout's mask) in the fp32 profile's SST and SQuAD training steps."""
    sst, squad = (fp32["steps"][t]["ops"]["aten::bernoulli_"][0] for t in ("sst", "squad"))
    return (f"took {sst:.1f}% of an SST-shaped training step's self CPU time and {squad:.1f}% of a SQuAD-shaped "
            f"one's on the {fp32['head']['cpu'].split(',')[0]} (one run at {profile_said(fp32)})")
