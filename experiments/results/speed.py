"""docs/results/speed.md (`make results`): this project's MQAN against the original, side by side, from the
speedcheck records (experiments/results/speedcheck.py); issue 44's targets judged from the same figures."""
from __future__ import annotations

from experiments.results import records, speedcheck
from experiments.results.render import table
from experiments.results.speed_drift import flagged_said, load15_said, moved_note, original_said
from experiments.results.speed_profiles import PROFILES, bf16_profile, dropout_share, profile
from experiments.results.speedcheck import HEADLINE, calm, cpu_of, cpus, latest_calm, ratio, variant_rounds

TEMPLATE = "speed.md"
# issue 44: examples/s against the original (training, decoding), and peak RSS against the original's no higher
# than when the issue was filed: the median of the headline configuration in the session measured then
TARGETS = {"train": 2.0, "decode": 3.0}
RSS_BASELINE = "2026-11-26-fp32"
TRIED = ("2026-11-29-fp32-narrow", "2026-11-29-fp32")  # a change tried and reverted, and the session it is set against
WORDS = {"examples_per_s": ("examples/s", "faster", "slower"), "peak_rss_gb": ("peak RSS", "higher", "lower")}
NOT_SHOWN = "not shown: within the baseline's spread"  # a peak-RSS verdict the baseline's own rounds cannot settle


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


