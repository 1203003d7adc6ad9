"""docs/results/serve_fairness.md (`make results`): one-sentence calls beside the largest legal call of `deca
serve` (issue 34 item 2), from docs/results/records/serve_fairness.json, which `python -m bench.serve_fairness
--record` writes. Every figure is computed here from the record's samples; so is whether the targets are met:
a one-sentence call's p99 at most `target.small_p99_s` while the large call runs, and the large call at most
`target.large_slowdown` slower beside the small calls than alone, on every server setting but the unbudgeted
one (kept for comparison). Each slowdown is one pair of runs, so it is judged only where the large call alone
varies between runs by less than the slowdown allowed.
"""
from __future__ import annotations

import math
import statistics

from experiments.results import batch_invariance, records
from experiments.results.render import num, table

PAGE = "docs/results/serve_fairness.md"
TEMPLATE = "serve_fairness.md"
RECORD = "serve_fairness"
BACK_TO_BACK = "serve_fairness_back_to_back"  # the same bench with --small-every 0: small calls back to back
TARGETED = ("budget", "over", "ray")  # the settings the targets are for; "unbudgeted" is for comparison
FEW_STEPS = 2  # a model answering a long row in this many greedy steps or fewer hardly exercises interruptions


def p99(values: list[float]) -> float | None:
    """The nearest-rank 99th percentile (the largest sample when there are fewer than 100)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[math.ceil(0.99 * len(ordered)) - 1]


def summary(server: dict, target: dict) -> dict:
    """A server setting's figures: small-call latencies idle and busy, the large call alone and beside them,
    its slowdown, and each target met or not (None when not measured)."""
    busy, alone, beside = server["busy"], server.get("large_alone"), server.get("large")
    slowdown = beside / alone - 1 if alone and beside else None
    tail = p99(busy)
    return {"idle_p50": statistics.median(server["idle"]) if server["idle"] else None, "n": len(busy),
            "p50": statistics.median(busy) if busy else None, "p99": tail, "max": max(busy) if busy else None,
            "alone": alone, "beside": beside, "slowdown": slowdown,
            "p99_met": None if tail is None else tail <= target["small_p99_s"],
            "slowdown_met": None if slowdown is None else slowdown <= target["large_slowdown"]}


def said(met: bool | None) -> str:
    return "not measured" if met is None else "met" if met else "missed"


def servers_table(record: dict) -> str:
    target = record["target"]
    rows = []
    for s in record["servers"]:
        f = summary(s, target)
        targeted = s["name"] in TARGETED
        rows.append((s["what"], num(f["idle_p50"], 2), f["n"], num(f["p50"], 2), num(f["p99"], 2), num(f["max"], 2),
                     num(f["alone"]), num(f["beside"]),
                     "-" if f["slowdown"] is None else f"{100 * f['slowdown']:+.1f}%",
                     said(f["p99_met"]) if targeted else "(comparison)",
                     said(f["slowdown_met"]) if targeted else "(comparison)"))
    return table(("server setting", "idle p50 s", "calls during", "p50 s", "p99 s", "max s", "large alone s",
                  "large beside s", "large slower by", f"p99 <= {target['small_p99_s']:g} s",
                  f"<= {100 * target['large_slowdown']:g}% slower (this pair)"), rows)


def verdict(record: dict, *others: dict) -> str:
    """What is missed (or not measured) on a targeted setting; where nothing is, 'not shown' when the large call
    alone varied between the runs on the page (`record` and `others`) by as much as the slowdown allowed, or
    more (one pair of runs cannot tell such a slowdown from that noise), else 'met', said to rest on one run."""
    found = {s["name"]: summary(s, record["target"]) for s in record["servers"]}
    missed = []
    for name in TARGETED:
        f = found.get(name)
        if f is None:
            missed.append(f"{name}: not measured")
            continue
        for key, label in (("p99_met", "small-call p99"), ("slowdown_met", "large-call slowdown")):
            if not f[key]:
                missed.append(f"{name}: {label} {said(f[key])}")
    if missed:
        return "missed (" + "; ".join(missed) + ")"
    if alone_noise(record, *others) >= record["target"]["large_slowdown"]:
        return "not shown (the slowdowns lie within the noise between runs)"
    return "met (in one run per setting)"


def targeted_slowdowns(*found: dict) -> list[tuple[dict, float]]:
    """(server, slowdown) of every targeted setting in the runs `found` that measured one."""
    return [(s, f["slowdown"]) for r in found for s in r["servers"] if s["name"] in TARGETED
            and (f := summary(s, r["target"]))["slowdown"] is not None]


def repeated_said(*found: dict) -> str:
    """Which targeted settings ran in more than one run, and whether the runs paced the small calls differently."""
    names = [s["name"] for s, _ in targeted_slowdowns(*found)]
    what = {s["name"]: s["what"].split(":")[0] for s, _ in targeted_slowdowns(*found)}
    twice = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if not twice:
        return ""
    paces = {r.get("settings", {}).get("small_every") for r in found}
    runs = max(names.count(n) for n in twice)
    return ("; " + " and ".join(f'"{what[n]}"' for n in twice) + f" each ran in {runs} runs"
            + (", with the small calls paced differently" if len(paces) > 1 else ""))


def verdict_why(record: dict, *others: dict) -> str:
    """What the verdict rests on: one run per setting in each run, every targeted slowdown on the page (this
    record's and `others`') one pair of runs, beside how far the large call alone varied between runs."""
    goal, noise = record["target"]["large_slowdown"], alone_noise(record, *others)
    found = targeted_slowdowns(record, *others)
    if not found:
        return ""
    word = "more than" if noise > goal else "as much as" if noise == goal else "less than"
    tails = [summary(s, record["target"])["p99_met"] for s in record["servers"] if s["name"] in TARGETED]
    p99 = (f"The small-call p99 is within {record['target']['small_p99_s']:g} s on every targeted setting. "
           if tails and all(tails) else "")
    return (p99 + f"Each run measured each setting once: the slowdowns ({slowdown_span([x for _, x in found])} over "
            f"{len(found)} pairs of runs{repeated_said(record, *others)}) are each one pair of runs, and the large "
            f"call alone varied {100 * noise:.0f}% between runs, {word} the {100 * goal:g}% allowed.")


def slowdown_span(slowdowns: list[float]) -> str:
    """'+2.0% to +2.7%' (one figure when they agree)."""
    low, high = f"{100 * min(slowdowns):+.1f}%", f"{100 * max(slowdowns):+.1f}%"
    return low if low == high else f"{low} to {high}"


def alone_noise(*found: dict) -> float:
    """How far apart the large call alone lay over the targeted settings of the runs `found`: max / min - 1."""
    alone = [s["large_alone"] for r in found for s in r["servers"] if s.get("large_alone") and s["name"] in TARGETED]
    return max(alone) / min(alone) - 1 if alone else 0.0


def threads(n: int, kind: str = "") -> str:
    """'1 torch thread', '16 threads'."""
    return f"{n} {kind}thread{'' if n == 1 else 's'}"


def floor_text(floor: dict) -> str:
    """The in-process floor: one maximal row encoded and answered, the one-sentence row answered."""
    med = {k: statistics.median(floor[k]) for k in ("encode_row_s", "answer_row_s", "answer_small_s")}
    n = len(floor["answer_row_s"])
    return (f"One row of the large call ({floor['row_tokens'][-1]:,} context + question tokens) takes "
            f"{med['encode_row_s']:.2f} s to encode and {med['answer_row_s']:.2f} s to answer (encode + "
            f"{steps_of(floor['row_answer_tokens'])}); the one-sentence row ({floor['small_tokens']} tokens) "
            f"{med['answer_small_s']:.3f} s (medians of {n}, {threads(floor['threads'], 'torch ')}, in the bench's own "
            f"process before any server starts, as `deca serve` runs the model; with {threads(floor['all_cores'])}, "
            f"torch's default, once: {floor['answer_row_all_cores_s'][0]:.2f} s). Tokenizing the whole large call takes {floor['prepare_call_s']:.2f} s. "
            f"The server interrupts a batch between its greedy steps but not in its encoder, so a one-sentence "
            f"call that arrives while a long row is encoded waits up to {med['encode_row_s']:.2f} s for it (the "
            f"floor of its wait), and would wait up to {med['answer_row_s']:.2f} s if the row were not interrupted."
            + ("" if floor["row_answer_tokens"] > FEW_STEPS else
               " This model answers a long row in so few steps that the bench tests the turns between rows (each its "
               "own batch) more than the interruptions within one; those are tested with a slow fake model in "
               "tests/infer/serve/test_engine.py."))


def model_steps(floor: dict) -> str:
    """What the model's answers let these runs test: a long row answered in FEW_STEPS greedy steps or fewer
    leaves little to interrupt within it."""
    said = f"The model answers each long row in {steps_of(floor['row_answer_tokens'])} (the floor below)"
    if floor["row_answer_tokens"] > FEW_STEPS:
        return said + "."
    return (said + ", so these runs test the turns between rows, hardly the interruptions within one (those are "
            "tested with a slow fake model in tests/infer/serve/test_engine.py).")


def steps_of(tokens: int) -> str:
    return f"{tokens} greedy step" + ("" if tokens == 1 else "s")


def back_to_back_text(record: dict) -> str:
    """The run with the small calls back to back (a closed loop as fast as the server answers): its table and
    where it comes from."""
    return (f"`{record['command']}` ({record['date']}, commit `{record['commit']}`, load average "
            f"{record['load_before'][0]:.2f} before, {record['load_after'][0]:.2f} after; record "
            f"[records/{BACK_TO_BACK}.json](records/{BACK_TO_BACK}.json)):\n\n{servers_table(record)}")


def call_rate(record: dict, name: str) -> str:
    """One-sentence calls answered a second on server `name` while the large call ran (calls over its time)."""
    server = next(s for s in record["servers"] if s["name"] == name)
    return f"{len(server['busy']) / server['large']:.1f}"


def alone_spread(*found: dict) -> str:
    """How much the large call alone varied between the server settings and runs on the page: the noise that
    one run's slowdown figure sits in."""
    alone = [s["large_alone"] for r in found for s in r["servers"] if s.get("large_alone") and s["name"] in TARGETED]
    return (f"The large call alone took {min(alone):.1f} to {max(alone):.1f} s over the {len(alone)} targeted settings "
            f"and runs above ({100 * alone_noise(*found):.0f}% apart), the same work each time: each slowdown is one "
            "pair of runs, and differences of a few percent between them are within that spread.")


def values(record: dict | None = None, back_to_back: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/serve_fairness.md (and of the README index line)."""
    record = record or records.load(RECORD)
    back_to_back = back_to_back or records.load(BACK_TO_BACK)
    m, s = record["model"], record["settings"]
    byname = {x["name"]: summary(x, record["target"]) for x in record["servers"]}

    def p99_of(name: str) -> str:
        found = byname.get(name, {})
        if found.get("p99") is None:
            return "not measured"
        few = f" (the largest of {found['n']} samples)" if found["n"] < 100 else ""
        return f"{found['p99']:.2f} s{few}"

    return {"date": record["date"], "commit": record["commit"], "command": record["command"],
            "machine": records.describe_machine(record["machine"]),
            "load": f"{record['load_before'][0]:.2f} before, {record['load_after'][0]:.2f} after",
            "minutes": f"{record['minutes']:.0f}",
            "model": f"`{m['path']}` ({m['bytes']:,} bytes, sha256 `{m['sha256'][:16]}`, iteration "
                     f"{record['floor']['iteration'] if record['floor']['iteration'] is not None else 'not recorded'})",
            "requests": str(s["max_requests"]), "chars": f"{s['max_chars']:,}", "small": str(s["small"]),
            "small_call": f"`{s['small_call']['context']}` / `{s['small_call']['question']}`",
            "small_every": (f"but at most one every {s['small_every']:g} s" if s.get("small_every")
                            else "back to back"),
            "p99_goal": f"{record['target']['small_p99_s']:g}",
            "slowdown_goal": f"{100 * record['target']['large_slowdown']:g}",
            "floor": floor_text(record["floor"]), "servers_table": servers_table(record),
            "verdict": verdict(record, back_to_back), "verdict_why": verdict_why(record, back_to_back),
            "model_steps": model_steps(record["floor"]), "budget_p99": p99_of("budget"), "ray_p99": p99_of("ray"),
            "unbudgeted_p99": p99_of("unbudgeted"), "back_to_back": back_to_back_text(back_to_back),
            "ray_rate": call_rate(back_to_back, "ray"),
            "alone_spread": alone_spread(record, back_to_back), "batch_dependence": batch_invariance.section()}
