"""docs/results/figure3.md: which of MQAN's three sources answers each task (the paper's Figure 3), from
docs/results/records/figure3.json; the renamed-label figures beside the zero-shot page's models."""
from __future__ import annotations

from eval.stats import Interval
from eval.verdict import at_floor
from experiments.results import records, zero_shot
from experiments.results.render import mean_sd, num, table
from experiments.results.table2 import words

PAGE = "docs/results/figure3.md"
TEMPLATE = "figure3.md"
SOURCES = ("vocabulary", "context", "question")
LABELS = {"sst": "SST", "srl": "QA-SRL", "woz.en": "WOZ", "schema": "MWSC"}


def floor_mark(task: str, t: dict, floors: dict) -> str:
    """The task's trivial floor (floors.json, full validation split) and whether the headline is at or below it
    (one model: the point itself, no interval)."""
    found = floors.get(task)
    if not found:
        return "-"
    low = at_floor(Interval(t["headline"], t["headline"], t["headline"]), found["floor"])
    return f"{num(found['floor'])} ({found['answerer']})" + (": **at or below**" if low else "")


def at_floor_tasks(record: dict, floors: dict) -> list[str]:
    """The tasks whose headline is at or below their trivial floor."""
    return [LABELS[task] for task, t in record["tasks"].items()
            if task in floors and at_floor(Interval(t["headline"], t["headline"], t["headline"]), floors[task]["floor"])]


def floor_note(record: dict, floors: dict) -> str:
    """'QA-SRL and MWSC at or below their trivial floors', or 'every task above its trivial floor'."""
    low = at_floor_tasks(record, floors)
    if not low:
        return "every task above its trivial floor"
    many = len(low) > 1
    return f"{words(low)} at or below {'their' if many else 'its'} trivial floor{'s' if many else ''}"


def floor_caveat(record: dict, floors: dict) -> str:
    """What the floors say about the sources shared with the paper."""
    low = at_floor_tasks(record, floors)
    if not low:
        return "Every task scores above its trivial floor (one model: no interval)."
    many = len(low) > 1
    return (f"But {words(low)} score{'' if many else 's'} at or below {'their' if many else 'its'} trivial "
            f"floor{'s' if many else ''} (one model: no interval), and where a model scores no better than a "
            "trivial answerer, a source shared with the paper is no sign that it learned the task.")


def source_sentence(record: dict) -> str:
    """Per task, the largest source's share of the answer tokens and the other sources' that are not 0."""
    parts = []
    for task, t in record["tasks"].items():
        ranked = sorted(SOURCES, key=lambda s: -t["share"][s])
        rest = [f"{num(t['share'][s])}% from the {s}" for s in ranked[1:] if t["share"][s] > 0]
        parts.append(f"{LABELS[task]} {num(t['share'][ranked[0]])}% from the {ranked[0]}"
                     + (f" ({', '.join(rest)})" if rest else ""))
    return "Of the answer tokens, " + "; ".join(parts) + "."


def source_table(record: dict, floors: dict | None = None) -> str:
    """Per task: answer tokens, each source's share (mean weight), the largest, the paper's, and the task's
    floor beside the headline."""
    rows = []
    for task, t in record["tasks"].items():
        top = max(SOURCES, key=lambda s: t["share"][s])
        cells = [(f"**{num(t['share'][s])}%**" if s == top else f"{num(t['share'][s])}%")
                 + f" ({num(t['mean_weight'][s], 2)})" for s in SOURCES]
        rows.append([f"{LABELS[task]} ({t['metric']} {num(t['headline'])})", floor_mark(task, t, floors or {}),
                     f"{t['tokens']:,}", *cells, t["paper"], "yes" if top == t["paper"] else "no"])
    return table(["task", "floor (strongest trivial)", "answer tokens", *SOURCES, "paper's Figure 3",
                  "same largest source"], rows, "llrrrrll")


def renamed_lines(record: dict, floors: dict) -> str:
    """One bullet per renamed task: the shares of the sources, the EM and whether it is at the floor."""
    lines = []
    for task, found in record["renamed"].items():
        shares = ", ".join(f"{v}% from the {s}" for s, v in found["share"].items())
        rest = 100 - sum(found["share"].values())
        shares += f" (the other {rest}% not recorded)" if rest > 0.5 else ""
        floor = floors[task]["floor"]
        where = "at or below" if at_floor(Interval(found["em"], found["em"], found["em"]), floor) else "above"
        lines.append(f"- {zero_shot.RENAMED[task]}: {shares}; EM {num(found['em'])}, {where} its {num(floor)} "
                     f"floor ({floors[task]['answerer']}; one model: no interval).")
    return "\n".join(lines)


def group_means(name: str, record: dict | None = None) -> dict[str, str]:
    """{renamed task: 'mean ± sd'} of a zero-shot group's models, and under "models" how many: '5 models'."""
    group = next(g for g in (record or records.load("zero_shot"))["groups"] if g["name"] == name)
    found = zero_shot.models(group)
    return {"models": f"{len(found)} model{'s' if len(found) != 1 else ''}",
            **{t: mean_sd([m[t]["em"] for _, m in found]) for t in zero_shot.RENAMED}}


REASONS = {"not tested": "the renamed interval reaches the floor", "fails": "the renamed interval lies wholly below "
           "the floor"}


def zero_shot_verdicts(record: dict, floors: dict) -> dict[tuple[str, str], str]:
    """{(group, renamed task): its verdict on zero_shot.md} (the six rows judged together, as there)."""
    _, heads = zero_shot.verdicts(record["groups"], floors)
    return dict(zip([(g["name"], t) for g in record["groups"] for t in zero_shot.RENAMED], heads))


def verdict_note(name: str, record: dict, floors: dict, verdicts: dict) -> str:
    """A group's zero_shot.md verdicts on the two renamings, and how many of its models give one answer to every
    review (those score the class share of that answer, the floor or under it)."""
    found = [verdicts[(name, t)] for t in zero_shot.RENAMED]
    said = (f"zero_shot.md's verdict: **{found[0]}** on both" if len(set(found)) == 1 else
            "zero_shot.md's verdicts: " + " and ".join(f"**{v}**" for v in found))
    said += f", {REASONS[found[0]]}" if len(set(found)) == 1 and found[0] in REASONS else ""
    models = zero_shot.group_named(record["groups"], name)
    ones = [sum(bool(m[t]["top answers"]) and m[t]["top answers"][0][1] == floors[t]["examples"] for _, m in models)
            for t in zero_shot.RENAMED]
    if not any(ones):
        return said + "; no model gives one answer to every review"
    counts = [f"{k} on {n.replace(' / ', '/')}" for k, n in zip(ones, zero_shot.RENAMED.values())]
    plural = "s" if len(models) != 1 else ""
    return said + f"; of its {len(models)} model{plural}, one answer to every review: {' and '.join(counts)}"


def renamed_floors(floors: dict) -> str:
    """The renamed tasks' floors: 'a 50.9 floor (constant answer) on both' where they are the same."""
    found = {(num(floors[t]["floor"]), floors[t]["answerer"]) for t in zero_shot.RENAMED}
    if len(found) == 1:
        value, who = found.pop()
        return f"a {value} floor ({who}) on both"
    return "floors of " + " and ".join(f"{num(floors[t]['floor'])} ({floors[t]['answerer']}) on {name}"
                                       for t, name in zero_shot.RENAMED.items())


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/figure3.md."""
    record = record or records.load("figure3")
    floors = floors if floors is not None else records.floors()
    alone, mwsc = group_means("SST alone"), group_means("SST + MWSC")
    shot = records.load("zero_shot")
    verdicts = zero_shot_verdicts(shot, floors)
    same = sum(max(SOURCES, key=lambda s: t["share"][s]) == t["paper"] for t in record["tasks"].values())
    return {"date": record["date"], "commit": record["commit"], "source": record["source"],
            "machine": records.describe_machine(record["machines"]["cpu2"]), "command": record["command"],
            "source_table": source_table(record, floors), "renamed": renamed_lines(record, floors),
            "same": f"{same} of {len(record['tasks'])}", "floor_caveat": floor_caveat(record, floors),
            "sources": source_sentence(record), "alone_ha": alone["sst.happy_angry"],
            "alone_su": alone["sst.supportive_unsupportive"], "mwsc_ha": mwsc["sst.happy_angry"],
            "mwsc_su": mwsc["sst.supportive_unsupportive"], "alone_models": alone["models"],
            "mwsc_models": mwsc["models"], "renamed_floors": renamed_floors(floors),
            "alone_verdicts": verdict_note("SST alone", shot, floors, verdicts),
            "mwsc_verdicts": verdict_note("SST + MWSC", shot, floors, verdicts)}


def index_values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The figures of README.md's index line (experiments/results/readme.py)."""
    record = record or records.load("figure3")
    floors = floors if floors is not None else records.floors()
    same = sum(max(SOURCES, key=lambda s: t["share"][s]) == t["paper"] for t in record["tasks"].values())
    return {"same": f"{same} of {len(record['tasks'])}", "floor_note": floor_note(record, floors)}
