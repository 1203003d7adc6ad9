"""docs/results/precision.md: bf16 against fp32 in quality from docs/results/records/precision.json, with
eval/verdict.py's verdict on "bf16 changes the quality" per task, and the SST recipe's spread over its distinct
fp32 runs (this record's and the zero-shot models', docs/results/zero_shot_seeds.json)."""
from __future__ import annotations

from experiments.results import records, speed, speedcheck, zero_shot
from experiments.results.render import floor_cell, floor_of, interval, judge, mean_sd, num, table

PAGE = "docs/results/precision.md"
TEMPLATE = "precision.md"
METRIC = {"sst": "EM", "srl": "nF1"}
MQAN = ("mqan", "qptr")  # one model: mqan/model.py's VARIANTS gives `mqan` as an alias of `qptr`


def runs_table(record: dict, task: str) -> str:
    """The runs of `task`: precision, seed, machine, best (iteration, minutes), best within the fp32 seed-123
    run's minutes where measured, median tokens/s."""
    rows = [[r["precision"], r["seed"], r["machine"], r["iterations"],
             f"{num(r['scores'][task])} ({r['best_iteration']}, {num(r['minutes_to_best'])})",
             num(r.get("best_within")), f"{r['tokens_per_s']:,}" if r.get("tokens_per_s") else "-"]
            for r in sorted(by_task(record, task), key=lambda r: (r["seed"], r["precision"]))]
    budget = num(next(r["within_minutes"] for r in by_task(record, task) if r.get("within_minutes")))
    return table(["precision", "seed", "machine", "iterations", f"best {METRIC[task]} (iteration, min)",
                  f"best within {budget} min", "train tokens/s (median)"], rows, "lrlrlrr")


def by_task(record: dict, task: str) -> list[dict]:
    return [r for r in record["runs"] if r["task"] == task]


def pairs(record: dict, task: str) -> tuple[list[float], list[float], list[int]]:
    """fp32 and bf16 best figures of `task`, seed by seed (the seeds that have both), and those seeds."""
    found = paired_runs(record, task)
    seeds = sorted(found)
    return [found[s]["fp32"]["scores"][task] for s in seeds], [found[s]["bf16"]["scores"][task] for s in seeds], seeds


def paired_runs(record: dict, task: str) -> dict[int, dict[str, dict]]:
    """seed -> precision -> run, for the seeds of `task` that ran in both precisions."""
    found: dict[int, dict[str, dict]] = {}
    for r in by_task(record, task):
        found.setdefault(r["seed"], {})[r["precision"]] = r
    return {s: p for s, p in found.items() if {"fp32", "bf16"} <= set(p)}


def rising(record: dict, task: str) -> list[bool | None]:
    """Each paired run's `still_rising` as the record holds it (None: unknown, no curve kept)."""
    return [p[side].get("still_rising") for _, p in sorted(paired_runs(record, task).items())
            for side in ("fp32", "bf16")]


def ends_at_best(record: dict, task: str) -> str:
    """What the record can say of the paired runs' curves: whether each run's best came at its last iteration."""
    runs = [r for p in paired_runs(record, task).values() for r in p.values()]
    known = [r.get("still_rising") for r in runs]
    if all(k is not None for k in known):
        return f"{sum(map(bool, known))} of {len(runs)} curves were still rising at the end (eval/verdict.py's rule)"
    last = sum(r["best_iteration"] == r["iterations"] for r in runs)
    which = "both" if last == len(runs) == 2 else f"{last} of the {len(runs)}"
    return (f"The record keeps no curves, so whether they still rose at the end is unknown (eval/verdict.py's "
            f"rising rule could not be applied); {which} runs had their best at their last validation")


def verdict_table(record: dict, floors: dict) -> tuple[str, str]:
    """Per task: bf16 minus fp32 on the best validation figure, paired by seed (both of a seed ran side by
    side on one machine), and the verdict (the target: no change)."""
    rows, heads = [], []
    for task in METRIC:
        fp32, bf16, seeds = pairs(record, task)
        floor = floor_of(floors.get(task))
        change, said = judge(fp32, bf16, 0.0, floor=floor, rising=rising(record, task), paired=True)
        head, _, why = said.partition(":")
        heads.append(f"{task} {head}")
        rows.append([task, ", ".join(map(str, seeds)), mean_sd(fp32), mean_sd(bf16), floor_cell(floors.get(task)),
                     interval(change), f"**{head}**" + (f":{why}" if why else "")])
    return table(["task", "seeds", "fp32", "bf16", "floor (strongest trivial)", "bf16 - fp32 [95% paired interval]",
                  "verdict (eval/verdict.py)"], rows, "llrrlrl"), ", ".join(heads)


def memory_table(record: dict) -> str:
    """Peak RSS and tokens/s of each setting."""
    rows = [[r["setting"], num(r["peak_rss_gb"], 2), f"{r['tokens_per_s']:,}" if r["tokens_per_s"] else "-"]
            for r in record["memory"]["rows"]]
    return table(["setting", "peak RSS GB", "tokens/s (under the QA-SRL pair's load)"], rows)


def dates_and_machines(record: dict) -> str:
    """Each machine with its runs' dates (the runs' own `date`; the record's where a run has none)."""
    found: dict[str, set[str]] = {}
    for r in record["runs"]:
        found.setdefault(r["machine"], set()).add(r.get("date") or record["date"])
    dates = sorted({d for ds in found.values() for d in ds})
    span = dates[0] if len(dates) == 1 else f"{dates[0]} to {dates[-1]}"
    each = "; ".join(f"`{k}`: {records.describe_machine(m)}, runs of {', '.join(sorted(found.get(k, ['none'])))}"
                     for k, m in record["machines"].items())
    return f"{span}; {each}"


def other_seeds(record: dict, task: str = "sst", seed: int = 123) -> str:
    """The commands of `task`'s runs of seeds other than `seed`, as the record holds them, one a line."""
    runs = sorted((r for r in by_task(record, task) if r["seed"] != seed), key=lambda r: (r["seed"], r["precision"]))
    return "\n".join(f"    .venv/bin/python {r['command']}    # {r['name']}, commit {r['commit'] or 'not recorded'}"
                     for r in runs)


def beside_pair(record: dict) -> str:
    """How many of the memory checks ran beside the QA-SRL pair, and which, as far as the record says."""
    found, rows = record["memory"].get("beside_srl_pair"), len(record["memory"]["rows"])
    if not found or found.get("count") is None:
        return f"whether any of the {rows} memory checks (below) ran beside this pair is not recorded"
    which = (", ".join(found["settings"]) if found.get("settings")
             else "the record does not hold which")
    return f"{found['count']} of the {rows} memory checks (below) ran beside this pair ({which})"


def bf16_cpus() -> list[str]:
    """The CPU models (with their bf16 units, named as speed.md names them: records.unit_names) of speed.md's sessions
    that timed a bf16 configuration."""
    return sorted({f"{speed.cpu_of(s)} ({records.unit_names(s.machine)})"
                   for s in speedcheck.sessions() if any(v.startswith("bf16") for v in s.meta["variants"].values())})


def seed_speed_note(record: dict, task: str = "sst", seed: int = 123) -> str:
    """Where `task`'s seed pair ran, and on which CPUs bf16 was timed at the paper's sizes: the step's size and
    the CPU's units are told apart only where both were timed on one CPU."""
    machines = sorted({r["machine"] for r in by_task(record, task) if r["seed"] == seed})
    where = "; ".join(f"`{k}`: {record['machines'][k]['cpu'] or 'CPU model not recorded'}" for k in machines)
    cpus = bf16_cpus()
    timed = f"speed.md timed bf16 at the paper's sizes only on {'; '.join(cpus)}" if cpus else \
        "speed.md has no bf16 timing at the paper's sizes"
    return (f"it ran on {where}. {timed}, so whether the small steps or this CPU's bf16 units explain the "
            "small difference is not told apart")


def agreement_where(record: dict) -> str:
    """The machine and load of the agreement rows' decoding, as far as the record says."""
    found = record["agreement"]
    key = found.get("machine")
    machine = f"`{key}` ({records.describe_machine(record['machines'][key])})" if key else "a machine not recorded"
    load = "load not recorded" if found.get("load") is None else f"load {found['load']}"
    return f"Decoded on {machine}, one timing per row, {load}: the seconds are rough"


def agreement_table(record: dict) -> str:
    """Each model decoded in fp32, bf16 and int8: headline and share of answers identical to fp32."""
    rows = [[r["model"], r["iteration"], r["task"], r["precision"], r["examples"], f"{r['metric']} {num(r['headline'])}",
             f"{num(r['identical'])}%", num(r["seconds"])] for r in record["agreement"]["rows"]]
    return table(["model", "iteration", "task", "precision", "examples", "headline", "identical to fp32",
                  "decoding s"], rows, "lrllrrrr")


def agreement_span(record: dict, task: str, precision: str) -> tuple[str, str]:
    """The lowest and highest share of answers changed by `precision` decoding on `task`."""
    changed = [100 - r["identical"] for r in record["agreement"]["rows"] if r["task"] == task
               and r["precision"] == precision]
    return num(min(changed)), num(max(changed))


def out_dir(command: str) -> str | None:
    """The checkpoint folder a training command names (`--out X`), if any."""
    words = command.split()
    return words[words.index("--out") + 1] if "--out" in words else None


def sst_ems(record: dict | None = None) -> list[float]:
    """The SST EM of each distinct fp32 run of the SST recipe (the MQAN model): this page's runs, and the
    zero-shot page's single-task SST models that are not among them (those ran the recipe's command, fp32 by
    default). A run on both pages is counted once; a bf16 run or another model variant (not MQAN) not at all."""
    record = record or records.load("precision")
    ours = {out_dir(r["command"]) or r["name"]: r for r in by_task(record, "sst")}
    ems = [r["scores"]["sst"] for r in ours.values()
           if r["precision"] == "fp32" and r.get("variant", "mqan") in MQAN]
    group = next(g for g in records.load("zero_shot")["groups"] if g["name"] == "SST alone")
    found = records.load(group["record"])
    return ems + [found[key]["sst"]["em"] for key, _ in group["models"] if key not in ours]


def sst_spread(record: dict | None = None) -> str:
    """The SST recipe's EM over its distinct fp32 runs (mean ± sd, n)."""
    ems = sst_ems(record)
    return f"{mean_sd(ems)} EM over {len(ems)} fp32 runs"


def table2_note(record: dict, table2: dict) -> str:
    """How the seed-11 fp32 SST run (the +QPtr command) stands to Table 2's run of the same name."""
    ours = next((r for r in by_task(record, "sst") if r["name"] == "sst-qptr-s11"), None)
    theirs = next((r for r in table2["runs"] if ours and r["name"] == ours["name"]), None)
    if ours is None or theirs is None:
        return ""
    said = (f"the seed-11 fp32 run ran Table 2's +QPtr command (`model.variant=qptr`, the same model as `mqan` in "
            f"mqan/model.py; seed 11) at commit {ours['commit']}")
    if (theirs["commit"], theirs["params_digest"]) == (ours["commit"], ours["params_digest"]):
        return said + ": the run Table 2 holds"
    return (said + f"; Table 2 now holds another run of that command (commit {theirs['commit']}: "
            f"{num(theirs['scores']['sst'])} EM, against {num(ours['scores']['sst'])} here)")


def paper_size_bf16() -> str:
    """bf16 against fp32 at the paper's sizes, case by case, from speed.md's latest session with both."""
    session = speed.bf16_session(speedcheck.sessions())
    if session is None:
        return "speed.md has no session of bf16 beside fp32"
    said = "; ".join(f"{case}: {word}" for case, word in speed.bf16_standing(session).items())
    return (f"in [speed.md](speed.md)'s {session.name}, on an {speed.cpu_of(session)}, bf16's examples/s against "
            f"fp32's: {said}")


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/precision.md."""
    record = record or records.load("precision")
    floors = floors if floors is not None else records.floors()
    out = {"dates_and_machines": dates_and_machines(record), "torch": record["torch"], "source": record["source"],
           "other_seeds": other_seeds(record), "beside_pair": beside_pair(record),
           "seed_speed_note": seed_speed_note(record), "agreement_where": agreement_where(record),
           "sst_runs": runs_table(record, "sst"),
           "srl_runs": runs_table(record, "srl"), "verdict_table": verdict_table(record, floors)[0],
           "verdicts": verdict_table(record, floors)[1],
           "memory_table": memory_table(record), "agreement_table": agreement_table(record),
           "sst_spread": sst_spread(record), "table2_note": table2_note(record, records.load("table2")),
           "paper_bf16": paper_size_bf16(), "srl_rising": ends_at_best(record, "srl"), "agreement_commands": "\n".join(
               f"    .venv/bin/python {c}" for c in record["agreement"]["commands"])}
    for task in METRIC:
        speed = {r["precision"]: r["tokens_per_s"] for r in by_task(record, task) if r["seed"] == 123}
        out[f"{task}_speed"] = num(100 * (speed["bf16"] / speed["fp32"] - 1), 0, sign=True)
        out[f"{task}_seeds"] = str(len(pairs(record, task)[2]))
    out["srl_bf16_low"], out["srl_bf16_high"] = agreement_span(record, "srl", "bf16")
    out["srl_floor"] = floor_cell(floors.get("srl"))
    return out
