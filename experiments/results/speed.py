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
TRIED = ("2026-11-29-fp32-narrow", "2026-11-29-fp32")  # a change tried and reverted, and the session it is set against
WORDS = {"examples_per_s": ("examples/s", "faster", "slower"), "peak_rss_gb": ("peak RSS", "higher", "lower")}


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
            rows.append([f"{case}: examples/s against the original", f">= x{goal:g}",
                         over(found, ratio(found.summary())), f"{cpu} ({who})", "met" if ok else "missed"])
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
                         over(found, ratio(found.summary("peak_rss_gb"), prefix="")), f"{cpu} ({who})",
                         "met" if ok else "missed"])
    return table(["target (issue 44)", "goal", "measured: median (min-max)", f"{HEADLINE} on: CPU (session)", ""],
                 rows, "llrll"), met, len(rows)


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
    CPU model measured."""
    parts = "; ".join(f"on {cpu}: " + ", ".join(headline(sessions, case, cpu=cpu) for case in speedcheck.CASES)
                      for cpu in cpus(sessions))
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
    return (f"in {s.name}, on an {cpu_of(s)} (units: {', '.join(s.machine['units'])}), each against the original, "
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
    """The page's placeholders, from the speedcheck records."""
    sessions = speedcheck.sessions()
    targets, met, total = targets_table(sessions)
    return {
        "sessions": session_lines(sessions),
        "speed_table": ratio_table(sessions, "examples_per_s", "x"),
        "memory_table": ratio_table(sessions, "peak_rss_gb", ""),
        "targets_table": targets,
        "targets_met": f"{met} of {total}",
        "rss_note": rss_note(sessions),
        "bf16_note": bf16_note(sessions),
        "tried_note": tried_note(sessions),
        "int8_note": int8_note(sessions),
        "in_short": in_short(sessions),
        "project_params": params(sessions, "project"),
        "original_params": params(sessions, "original"),
    }
