"""docs/results/precision.md: bf16 against fp32 in quality from docs/results/records/precision.json, with
eval/verdict.py's verdict on "bf16 changes the quality" per task, and the SST recipe's seed spread from the
zero-shot models' records (docs/results/zero_shot_seeds.json)."""
from __future__ import annotations

from experiments.results import records, zero_shot
from experiments.results.render import judge, mean_sd, num, table

PAGE = "docs/results/precision.md"
TEMPLATE = "precision.md"
METRIC = {"sst": "EM", "srl": "nF1"}


def runs_table(record: dict, task: str) -> str:
    """The fp32 and bf16 runs of `task`: best (iteration, minutes), best within the fp32 run's minutes, tokens/s."""
    rows = [[r["task"].upper() if r["task"] == "sst" else "QA-SRL", r["precision"], r["seed"], r["iterations"],
             f"{num(r['scores'][task])} ({r['best_iteration']}, {num(r['minutes_to_best'])})", num(r["best_within"]),
             f"{r['tokens_per_s']:,}"] for r in record["runs"] if r["task"] == task]
    budget = num(next(r["within_minutes"] for r in record["runs"] if r["task"] == task))
    return table(["task", "precision", "seed", "iterations", f"best {METRIC[task]} (iteration, min)",
                  f"best within {budget} min", "train tokens/s (median)"], rows, "llrrlrr")


def pair(record: dict, task: str) -> tuple[dict, dict]:
    """The (fp32, bf16) runs of `task`."""
    found = {r["precision"]: r for r in record["runs"] if r["task"] == task}
    return found["fp32"], found["bf16"]


def verdict_table(record: dict, floors: dict) -> tuple[str, str]:
    """Per task: bf16 minus fp32 on the best validation figure, and the verdict (the target: no change)."""
    rows, heads = [], []
    for task in METRIC:
        fp32, bf16 = pair(record, task)
        floor = (floors.get(task) or {}).get("baseline")
        change, said = judge([fp32["scores"][task]], [bf16["scores"][task]], 0.0, floor=floor)
        heads.append(f"{task} {said.split(':')[0]}")
        rows.append([task, num(change.value, sign=True), "unbounded (one run a side)", f"**{said.split(':')[0]}**:"
                     + said.split(":", 1)[1]])
    return table(["task", "bf16 - fp32", "95% interval", "verdict (eval/verdict.py)"], rows, "lrll"), ", ".join(heads)


def memory_table(record: dict) -> str:
    """Peak RSS and tokens/s of each setting."""
    rows = [[r["setting"], num(r["peak_rss_gb"], 2), f"{r['tokens_per_s']:,}" if r["tokens_per_s"] else "-"]
            for r in record["memory"]["rows"]]
    return table(["setting", "peak RSS GB", "tokens/s (under the QA-SRL pair's load)"], rows)


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


def sst_spread() -> str:
    """The SST recipe's EM over the single-task SST models of the zero-shot page (mean ± sd, n)."""
    group = next(g for g in records.load("zero_shot")["groups"] if g["name"] == "SST alone")
    ems = [m["sst"]["em"] for _, m in zero_shot.models(group)]
    return f"{mean_sd(ems)} EM over {len(ems)} models"


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/precision.md."""
    record = record or records.load("precision")
    floors = floors if floors is not None else records.load("baselines")["tasks"]
    out = {"date": record["date"], "torch": record["torch"], "source": record["source"],
           "machine": records.describe_machine(record["machines"]["epyc"]), "sst_runs": runs_table(record, "sst"),
           "srl_runs": runs_table(record, "srl"), "verdict_table": verdict_table(record, floors)[0],
           "verdicts": verdict_table(record, floors)[1],
           "memory_table": memory_table(record), "agreement_table": agreement_table(record),
           "sst_spread": sst_spread(), "agreement_commands": "\n".join(
               f"    .venv/bin/python {c}" for c in record["agreement"]["commands"])}
    for task in METRIC:
        fp32, bf16 = pair(record, task)
        out[f"{task}_speed"] = num(100 * (bf16["tokens_per_s"] / fp32["tokens_per_s"] - 1), 0, sign=True)
    out["srl_bf16_low"], out["srl_bf16_high"] = agreement_span(record, "srl", "bf16")
    return out
