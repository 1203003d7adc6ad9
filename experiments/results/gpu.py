"""docs/results/gpu.md: bf16 against fp32 on one H100 (bench/model.py --device cuda), a 5-minute SST run in bf16,
and the Table 2 grid on an H200, from docs/results/records/gpu.json (the H100 run's printed tables) and
docs/results/records/table2.json (the grid's runs). Every figure of the prose is computed here from those rows:
the ranges of bf16's speed and memory against fp32, MFU, the best moving-average EM and its minute; the SST
recipe's spread between seeds comes from precision.md's generator, set beside the one GPU seed without a
verdict."""
from __future__ import annotations

import re
import statistics

from experiments.results import precision, records
from experiments.results.render import mean_sd, num, table

PAGE = "docs/results/gpu.md"
TEMPLATE = "gpu.md"
BENCH_HEADER = ("configuration", "phase", "examples/batch", "ctx mean", "s/step", "examples/s", "peak GB",
                "TFLOP/s", "MFU %", "speed vs fp32", "memory vs fp32")
BENCH_FIELDS = ("configuration", "phase", "examples_per_batch", "ctx_mean", "s_per_step", "examples_per_s",
                "peak_gb", "tflops", "mfu_pct", "speed_vs_fp32", "memory_vs_fp32")


def cell(field: str, value) -> str:
    """A bench row's value as the bench printed it ('-' where it printed none)."""
    if value is None or isinstance(value, str):
        return "-" if value is None else value
    if field == "speed_vs_fp32":
        return f"x{value:.2f}"
    if field in ("peak_gb", "mfu_pct", "memory_vs_fp32"):
        return f"{value:.2f}"
    return f"{value:.0f}" if field == "examples_per_batch" and value == int(value) else f"{value:.1f}"


def mfu(record: dict, row: dict) -> float | None:
    """A bench row's MFU %: its TFLOP/s over the dense peak of its own precision (`peak_tflops_<precision>`)."""
    if row["tflops"] is None:
        return None
    return 100 * row["tflops"] / record[f"peak_tflops_{row['configuration']}"]


def bench_table(record: dict, run: dict) -> str:
    """A bench run's rows, MFU against each row's precision's peak; a column the run did not keep (every value
    null) is left out."""
    found = [{**r, "mfu_pct": mfu(record, r)} for r in run["rows"]]
    keep = [i for i, f in enumerate(BENCH_FIELDS) if any(r[f] is not None for r in found)]
    rows = [[cell(BENCH_FIELDS[i], r[BENCH_FIELDS[i]]) for i in keep] for r in found]
    return table([BENCH_HEADER[i] for i in keep], rows, "l" * len(keep))


def rows_of(record: dict, precision_: str | None = None, phase: str = "") -> list[dict]:
    """The bench rows of every run, of one precision and whose phase starts with `phase`."""
    return [r for run in record["runs"] for r in run["rows"]
            if (precision_ is None or r["configuration"] == precision_) and r["phase"].startswith(phase)]


def span(values: list[float], digits: int = 2) -> tuple[str, str]:
    """The lowest and highest of `values`, as text."""
    return num(min(values), digits), num(max(values), digits)


def step_seconds(row: dict) -> float:
    """A bench row's seconds per step from its examples per batch over its examples/s (the printed s/step has one
    decimal)."""
    return row["examples_per_batch"] / row["examples_per_s"]


def step_values(record: dict) -> dict[str, str]:
    """Training steps' seconds at each budget, row by row, and how many times longer the larger budget's are."""
    small, large = record["runs"]
    at_large = {(x["configuration"], x["phase"]): x for x in large["rows"]}
    pairs = [(r, at_large[r["configuration"], r["phase"]]) for r in small["rows"]
             if r["phase"].startswith("train") and (r["configuration"], r["phase"]) in at_large]
    rows = [[r["phase"], r["configuration"], num(step_seconds(r), 3), num(step_seconds(x), 3),
             f"x{step_seconds(x) / step_seconds(r):.2f}"] for r, x in pairs]
    out = {"step_table": table(["phase", "configuration", f"s/step at {small['settings']['budget']:,}",
                                f"at {large['settings']['budget']:,}", "longer by"], rows)}
    out["step_small_low"], out["step_small_high"] = span([step_seconds(r) for r, _ in pairs], 3)
    out["step_large_low"], out["step_large_high"] = span([step_seconds(x) for _, x in pairs], 3)
    out["step_ratio_low"], out["step_ratio_high"] = span([step_seconds(x) / step_seconds(r) for r, x in pairs], 1)
    fp32 = [step_seconds(x) / step_seconds(r) for r, x in pairs if r["configuration"] == "fp32"]
    out["step_ratio_fp32_low"], out["step_ratio_fp32_high"] = span(fp32, 1)
    return out


def faster_said(record: dict) -> str:
    """The bf16 rows at or above fp32's examples/s: how many, their range, and that each is one bench run (its
    steps) with no repeat."""
    found = [(r, run["settings"]["steps"]) for run in record["runs"] for r in run["rows"]
             if r["configuration"] == "bf16" and r["speed_vs_fp32"] >= 1]
    said = f"at or above fp32 in {len(found)} of {len(rows_of(record, 'bf16'))} rows"
    if not found:
        return said
    low, high = span([r["speed_vs_fp32"] for r, _ in found])
    steps = " or ".join(str(n) for n in sorted({n for _, n in found}, reverse=True))
    return f"{said}: x{low if low == high else f'{low}-{high}'}, each one bench run of {steps} steps, not repeated"


def bench_values(record: dict) -> dict[str, str]:
    """The figures of the two bench runs: step times, MFU, bf16's speed and memory ranges, the larger budget's gain."""
    small, large = record["runs"]
    out = step_values(record)
    for precision_ in ("bf16", "fp32"):
        out[f"mfu_max_{precision_}"] = num(max(m for r in rows_of(record, precision_) if (m := mfu(record, r)) is not None), 2)
    out["speed_low"], out["speed_high"] = span([r["speed_vs_fp32"] for r in rows_of(record, "bf16")])
    out["mem_train_low"], out["mem_train_high"] = span([r["memory_vs_fp32"] for r in rows_of(record, "bf16", "train")])
    out["mem_decode_low"], out["mem_decode_high"] = span([r["memory_vs_fp32"] for r in rows_of(record, "bf16", "greedy")])
    bf16 = rows_of(record, "bf16")
    out["bf16_rows"] = str(len(bf16))
    out["faster_said"] = faster_said(record)
    out["smaller_rows"] = str(sum(r["memory_vs_fp32"] < 1 for r in bf16))
    out["mem_train_saving"] = num(100 * (1 - min(r["memory_vs_fp32"] for r in rows_of(record, "bf16", "train"))), 0)
    for name, run in (("small", small), ("large", large)):
        decode = [r["speed_vs_fp32"] for r in run["rows"] if r["configuration"] == "bf16" and r["phase"].startswith("greedy")]
        out[f"decode_speed_{name}_low"], out[f"decode_speed_{name}_high"] = span(decode)
        out[f"decode_batch_{name}"] = f"{run['settings']['decode_batch']:,}"
        out[f"budget_{name}"] = f"{run['settings']['budget']:,}"
    out["budget_factor"] = num(large["settings"]["budget"] / small["settings"]["budget"], 0)
    for task in ("squad", "sst"):
        rate = [next(r["examples_per_s"] for r in run["rows"] if r["configuration"] == "fp32"
                     and r["phase"] == f"train step, {task}") for run in (small, large)]
        out[f"{task}_gain"] = num(rate[1] / rate[0])
    out["decode_steps"] = str(small["settings"]["decode_steps"])
    out["peak_tflops"] = str(record["peak_tflops_bf16"])
    out["peak_tflops_fp32"] = str(record["peak_tflops_fp32"])
    return out


def best_moving_average(curve: list[dict]) -> dict:
    """The first row of the curve at its highest moving-average EM."""
    return max(curve, key=lambda p: (p["em_moving_average"], -p["iteration"]))


def curve_table(curve: list[dict], best: dict) -> str:
    """The SST run's kept rows; the best moving average in bold."""
    rows = [[p["iteration"], num(p["minutes"]), num(p["train_loss"], 3), num(p["em"]),
             f"**{num(p['em_moving_average'])}**" if p is best else num(p["em_moving_average"]),
             f"{p['tokens_per_s']:,}", f"{num(p['peak_gpu_gib'], 2)} GiB", f"{num(p['mfu_pct'], 2)}%"] for p in curve]
    return table(["iteration", "minutes", "train loss", "EM", "EM (moving average)", "tokens/s", "peak GPU memory",
                  "MFU"], rows)


def overfits(best: dict, last: dict) -> str:
    """What the kept rows after the best say: overfitting where the training loss fell while the moving-average EM
    ended lower."""
    if last is best:
        return "the best kept row is the last, so the kept rows show no overfitting"
    if last["train_loss"] < best["train_loss"] and last["em_moving_average"] < best["em_moving_average"]:
        return "the model overfits"
    return "the kept rows show no overfitting"


def logged_rows(sst: dict) -> int:
    """How many validations the run logged: one every `every` iterations, and one at its last iteration."""
    last, every = sst["curve"][-1]["iteration"], sst["settings"]["every"]
    return last // every + (last % every > 0)


def runs_of(values: list[int], step: int) -> list[list[int]]:
    """`values` (sorted) cut into runs that rise by `step`."""
    found: list[list[int]] = []
    for v in values:
        if found and v - found[-1][-1] == step:
            found[-1].append(v)
        else:
            found.append([v])
    return found


def left_out(sst: dict) -> str:
    """The logged validations' iterations the page did not keep, as runs of consecutive ones."""
    last, every = sst["curve"][-1]["iteration"], sst["settings"]["every"]
    kept = {p["iteration"] for p in sst["curve"]}
    missing = [i for i in [*range(every, last, every), last] if i not in kept]
    if not missing:
        return "none left out"
    parts = [f"{r[0]:,}" if len(r) == 1 else f"{r[0]:,}-{r[-1]:,}" for r in runs_of(missing, every)]
    said = parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"
    return f"the rows of {said} left out"


def sst_values(sst: dict) -> dict[str, str]:
    """The 5-minute SST run: its table, best moving average of the kept rows (minute, iteration), rate, MFU, the
    loss after the best, and the SST recipe's spread between seeds beside it."""
    curve, settings = sst["curve"], sst["settings"]
    best, last = best_moving_average(curve), curve[-1]
    ems = precision.sst_ems()
    return {"sst_command": sst["command"], "sst_table": curve_table(curve, best), "seed": str(sst["seed"]),
            "dimension": str(settings["dimension"]), "token_budget": f"{settings['token_budget']:,}",
            "lr": f"{settings['lr']:g}", "ema": f"{settings['ema']:g}", "every": str(settings["every"]),
            "validation_examples": str(settings["validation_examples"]),
            "best_ma": num(best["em_moving_average"]), "best_ma_minutes": num(best["minutes"]),
            "best_ma_iteration": f"{best['iteration']:,}", "best_loss": num(best["train_loss"], 3),
            "last_loss": num(last["train_loss"], 3), "last_ma": num(last["em_moving_average"]),
            "last_iteration": f"{last['iteration']:,}", "overfits": overfits(best, last),
            "kept_rows": str(len(curve)), "logged_rows": str(logged_rows(sst)), "left_out": left_out(sst),
            "iterations_per_s": num(last["iteration"] / (60 * last["minutes"])),
            "tokens_median": f"{statistics.median(p['tokens_per_s'] for p in curve[1:]):,.0f}",
            "sst_mfu": num(max(p["mfu_pct"] for p in curve), 2), "cpu_spread": mean_sd(ems),
            "cpu_models": str(len(ems)), "gap": num(best["em_moving_average"] - statistics.mean(ems), sign=True)}


def grid_heading(table2: dict, grid: list[dict]) -> str:
    """The grid section's heading: the GPU, the runs' commits where recorded, else the commit that reported them
    (from the record's `source`)."""
    machine = table2["machines"]["h200"]
    gpu_name = machine.get("gpu", "GPU").removeprefix("NVIDIA ")
    commits = sorted({r["commit"] for r in grid if r.get("commit")})
    if commits:
        return f"{gpu_name}, commit {', '.join(commits)}"
    reported = re.search(r"at commit (\w+)", table2.get("source", ""))
    return f"{gpu_name}; the runs' commit not recorded" + (f", reported in {reported.group(1)}" if reported else "")


def grid_values(table2: dict) -> dict[str, str]:
    """Table 2's runs on the H200 (those later replaced in Table 2 too, kept under the record's `replaced`): how
    many of each task, their iterations and validation interval (from the command), the machine; and whether the
    record holds their minutes."""
    replaced = table2.get("replaced", {})
    grid = [r for r in table2["runs"] + [r for t in replaced.values() for r in t["runs"]] if r["machine"] == "h200"]
    rows = []
    for task, label in (("woz.en", "WOZ"), ("srl", "QA-SRL")):
        runs = [r for r in grid if r["task"] == task]
        iters, every = (re.search(rf"--{flag} (\d+)", runs[0]["command"]).group(1) for flag in ("iterations", "val-every"))
        seeds = ", ".join(str(s) for s in sorted({r["seed"] for r in runs}))
        minutes = [r["minutes"] for r in runs if r["minutes"] is not None]
        rows.append([len(runs), label, f"{int(iters):,} (validation every {every})", seeds,
                     f"{num(min(minutes))}-{num(max(minutes))}" if minutes else "not recorded"])
    machine = table2["machines"]["h200"]
    unrecorded = [k for k in ("torch", "driver") if not machine.get(k)]
    versions = f"{' and '.join(unrecorded)} version{'s' * (len(unrecorded) > 1)} not recorded"
    return {"grid_machine": records.describe_machine(machine) + (f" ({versions})" if unrecorded else ""),
            "grid_heading": grid_heading(table2, grid),
            "grid_table": table(["runs", "task", "iterations", "seeds", "each run (min)"], rows, "rllll"),
            "grid_replaced": "".join(f"\n\n{t['why']}" for t in replaced.values())}


def values(record: dict | None = None, table2: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/gpu.md."""
    record = record or records.load("gpu")
    table2 = table2 or records.load("table2")
    small, large = record["runs"]
    machine = record["machines"][small["machine"]]
    return {"date": record["date"], "commit": record["commit"], "environment": record["environment"],
            "machine": records.describe_machine(machine), "source": record["source"],
            "bench_command_small": small["command"], "bench_command_large": large["command"],
            "bench_table_small": bench_table(record, small), "bench_table_large": bench_table(record, large),
            **bench_values(record), **sst_values(record["sst"]), **grid_values(table2)}
