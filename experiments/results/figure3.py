"""docs/results/figure3.md: which of MQAN's three sources answers each task (the paper's Figure 3), from
docs/results/records/figure3.json; the renamed-label figures beside the zero-shot page's models."""
from __future__ import annotations

from eval.stats import Interval
from eval.verdict import at_floor
from experiments.results import records, zero_shot
from experiments.results.render import mean_sd, num, table

PAGE = "docs/results/figure3.md"
TEMPLATE = "figure3.md"
SOURCES = ("vocabulary", "context", "question")
LABELS = {"sst": "SST", "srl": "QA-SRL", "woz.en": "WOZ", "schema": "MWSC"}


def source_table(record: dict) -> str:
    """Per task: answer tokens, each source's share (mean weight), the largest, and the paper's."""
    rows = []
    for task, t in record["tasks"].items():
        top = max(SOURCES, key=lambda s: t["share"][s])
        cells = [(f"**{num(t['share'][s])}%**" if s == top else f"{num(t['share'][s])}%")
                 + f" ({num(t['mean_weight'][s], 2)})" for s in SOURCES]
        rows.append([f"{LABELS[task]} ({t['metric']} {num(t['headline'])})", f"{t['tokens']:,}", *cells, t["paper"],
                     "yes" if top == t["paper"] else "no"])
    return table(["task", "answer tokens", *SOURCES, "paper's Figure 3", "same largest source"], rows, "lrrrrll")


def renamed_lines(record: dict, floors: dict) -> str:
    """One bullet per renamed task: the shares of the sources, the EM and whether it is at the floor."""
    lines = []
    for task, found in record["renamed"].items():
        shares = ", ".join(f"{v}% from the {s}" for s, v in found["share"].items())
        floor = floors[task]["floor"]
        where = "at or below" if at_floor(Interval(found["em"], found["em"], found["em"]), floor) else "above"
        lines.append(f"- {zero_shot.RENAMED[task]}: {shares}; EM {num(found['em'])}, {where} its {num(floor)} "
                     f"floor ({floors[task]['answerer']}; one model: no interval).")
    return "\n".join(lines)


def group_means(name: str) -> dict[str, str]:
    """{renamed task: 'mean ± sd'} of a zero-shot group's models."""
    group = next(g for g in records.load("zero_shot")["groups"] if g["name"] == name)
    found = zero_shot.models(group)
    return {t: f"{mean_sd([m[t]['em'] for _, m in found])} ({len(found)} models)" for t in zero_shot.RENAMED}


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/figure3.md."""
    record = record or records.load("figure3")
    floors = floors if floors is not None else records.floors()
    alone, mwsc = group_means("SST alone"), group_means("SST + MWSC")
    same = sum(max(SOURCES, key=lambda s: t["share"][s]) == t["paper"] for t in record["tasks"].values())
    return {"date": record["date"], "commit": record["commit"], "source": record["source"],
            "machine": records.describe_machine(record["machines"]["cpu2"]), "command": record["command"],
            "source_table": source_table(record), "renamed": renamed_lines(record, floors),
            "same": f"{same} of {len(record['tasks'])}", "alone_ha": alone["sst.happy_angry"],
            "alone_su": alone["sst.supportive_unsupportive"], "mwsc_ha": mwsc["sst.happy_angry"],
            "mwsc_su": mwsc["sst.supportive_unsupportive"]}
