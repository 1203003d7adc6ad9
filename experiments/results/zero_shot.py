"""docs/results/zero_shot.md: the SST question with renamed labels, from experiments/zero_shot_report.py's
JSON files (docs/results/zero_shot_*.json) and docs/results/records/zero_shot.json (which model is which),
with eval/verdict.py's verdict on the paper's "only a small drop" for each group and renaming."""
from __future__ import annotations

from collections import Counter
from statistics import mean

from eval.steps import Step, judge_steps
from experiments.results import examples, planned, records
from experiments.results.render import (floor_cell, floor_of, interval, mde_cell, mean_sd, num, p_cell, table,
                                        verdict_cell)

PAGE = "docs/results/zero_shot.md"
TEMPLATE = "zero_shot.md"
TRAINED = "sst"
RENAMED = {"sst.happy_angry": "happy / angry", "sst.supportive_unsupportive": "supportive / unsupportive"}
PAPER_DROP = 0.0  # the paper reports "only a small drop", no figure: the verdict asks whether there is a change


def models(group: dict) -> list[tuple[str, dict]]:
    """(label, {task: its zero_shot_report figures}) of each model of a group."""
    found = records.load(group["record"])
    return [(label, found[key]) for key, label in group["models"]]


def cell(figures: dict) -> str:
    """'EM (first word right, one-word answers %)'."""
    return f"{num(figures['em'])} ({num(figures['first word right'])}, {figures['stops']:.0f}%)"


def group_table(group: dict) -> str:
    """One row per model and the group's mean ± sd."""
    rows = [[label, *(cell(m[t]) for t in (TRAINED, *RENAMED))] for label, m in models(group)]
    ems = {t: [m[t]["em"] for _, m in models(group)] for t in (TRAINED, *RENAMED)}
    rows.append([f"**{group['name']}, mean ± sd ({len(rows)})**", *(f"**{mean_sd(ems[t])}**" for t in ems)])
    return table(["model", "asked as trained", *RENAMED.values()], rows)


def top_answers(group: dict, count: int = 3) -> str:
    """Per model and renaming, its most frequent answers ("x3": the word three times) as a bullet list."""
    lines = []
    for label, m in models(group):
        said = "; ".join(f"{name}: " + ", ".join(f'"{a}" {n}' for a, n in m[task]["top answers"][:count])
                         for task, name in RENAMED.items())
        lines.append(f"- {label}: {said}")
    return "\n".join(lines)


def step_of(group: dict, task: str, floors: dict) -> Step:
    """As trained -> renamed over the group's models, for eval/steps.py: per example where every model kept its
    record of both (docs/results/records/examples/zero_shot/<record>/<model>.json.gz), else over the models."""
    found = models(group)
    kept = [examples.load(f"zero_shot/{group['record']}", key) for key, _ in group["models"]]
    (a, clusters), (b, _) = examples.side(kept, TRAINED), examples.side(kept, task)
    if a is None or b is None or any(r["tasks"][TRAINED]["ids_sha256"] != r["tasks"][task]["ids_sha256"] for r in kept):
        a = b = clusters = None  # paired only on the same sentences
    return Step(f"{group['name']} {task}", PAPER_DROP, a, b,
                ([m[TRAINED]["em"] for _, m in found], [m[task]["em"] for _, m in found]), clusters,
                floor_of(floors[task]))


def verdicts(groups: list[dict], floors: dict) -> tuple[str, list[str]]:
    """Per group and renaming, judged together (eval/steps.py: Holm over the rows, each row's MDE): as trained,
    renamed [95% interval], the renamed task's floor, the change [95% interval], the verdict (a renamed side
    wholly below its floor "fails")."""
    keys = [(group, task, name) for group in groups for task, name in RENAMED.items()]
    rows, heads = [], []
    for (group, task, name), j in zip(keys, judge_steps([step_of(g, t, floors) for g, t, _ in keys])):
        heads.append(j.verdict)
        side = j.sides[1].interval
        rows.append([group["name"], name, num(mean(j.step.seed_values[0])),
                     f"{num(side.value)} [{num(side.low)}, {num(side.high)}]", floor_cell(floors[task]),
                     interval(j.change.interval), mde_cell(j), p_cell(j), verdict_cell(j)])
    return table(["models", "renaming", "as trained", "renamed [95% interval]", "floor", "change [95% interval]",
                  "MDE (80% power)", "Holm p", "verdict (eval/verdict.py)"], rows, "llrrlrrrl"), heads


def tally(heads: list[str]) -> str:
    """'4 fails, 2 not tested'."""
    return ", ".join(f"{heads.count(h)} {h}" for h in sorted(set(heads)))


def summary(heads: list[str]) -> str:
    """One sentence on the verdicts as a whole."""
    if all(h == "not tested" for h in heads):
        return ("No group of models answers the renamed question reliably better than chance, so none of them "
                "tests the paper's claim.")
    return f"Verdicts: {tally(heads)}."


def span(groups: list[dict], name: str, task: str, key: str) -> tuple[str, str]:
    """The lowest and highest `key` of `task` over the models of group `name`."""
    found = [m[task][key] for g in groups if g["name"] == name for _, m in models(g)]
    return num(min(found)), num(max(found))


def group_named(groups: list[dict], name: str) -> list[tuple[str, dict]]:
    return [found for g in groups if g["name"] == name for found in models(g)]


def near_trained(groups: list[dict], name: str, task: str) -> str:
    """How far each model's first-word-right share on `task` lies from its EM asked as trained, at most."""
    found = group_named(groups, name)
    gap = max(abs(m[task]["first word right"] - m[TRAINED]["em"]) for _, m in found)
    trained = [m[TRAINED]["em"] for _, m in found]
    return f"within {num(gap)} points of each model's EM asked as trained ({num(min(trained))}-{num(max(trained))})"


def first_word_floor(groups: list[dict], name: str, task: str, floors: dict) -> dict[str, str]:
    """A group's first-word-right shares on `task` against the share a constant first word gets at most (the gold
    majority label's, floors.json's constant answer): how many models lie above it, and which give one answer to
    every review (their first word right for just that label's share)."""
    found, n = group_named(groups, name), floors[task]["examples"]
    constant = floors[task]["floors"]["constant answer"]
    above = sum(m[task]["first word right"] > constant for _, m in found)
    lie = f"{above} of the {len(found)} models lie{'s' if above == 1 else ''} above it"
    said = ("every model lies above it" if above == len(found) else "no model lies above it" if not above else
            ("only " if above == 1 else "") + lie)
    one = [f"{label.rsplit(', ', 1)[-1]} \"{m[task]['top answers'][0][0]}\"" for label, m in found
           if m[task]["top answers"] and m[task]["top answers"][0][1] == n]
    gives = f"{len(one)} give{'s' if len(one) == 1 else ''} one answer to every review" if one else ""
    return {"floor": num(constant), "above": said + (f"; {gives} ({', '.join(one)})" if one else ""),
            "short": f"{above} of {len(found)} model{'s' if len(found) != 1 else ''} above it", "gives": gives}


def stops_text(groups: list[dict], name: str) -> str:
    """How many of a group's renamed answers stop after one word, over its models and both renamings."""
    stops = [m[t]["stops"] for _, m in group_named(groups, name) for t in RENAMED]
    if min(stops) == 100:
        return "Every model stops after one word on every renamed answer"
    return f"The models stop after one word on {num(min(stops))}-{num(max(stops))}% of their renamed answers"


def lean_text(groups: list[dict], name: str, floors: dict) -> str:
    """Each model's most frequent answer's share of the reviews, per renaming, beside the gold majority's."""
    parts = []
    for task, renamed in RENAMED.items():
        n, gold = floors[task]["examples"], floors[task]["floors"]["constant answer"]
        shares = [f"{num(100 * m[task]['top answers'][0][1] / n)}% (\"{m[task]['top answers'][0][0]}\", "
                  f"{label.rsplit(', ', 1)[-1]})" for label, m in group_named(groups, name)]
        parts.append(f"{renamed}: {', '.join(shares)} against the gold majority label's {num(gold)}%")
    return ("Each model's most frequent answer takes, of the reviews, " + "; ".join(parts)
            + ". The further a model's share lies above the gold majority's, the more of its EM is the class balance.")


def label_words(task: str) -> tuple[str, ...]:
    """The renamed question's two label words: ('happy', 'angry') of sst.happy_angry."""
    return tuple(task.split(".", 1)[1].split("_"))


def label_first(figures: dict, task: str, n: int) -> float:
    """The share of the `n` reviews whose answer starts with one of the question's two label words, counted over
    the answers the figures keep (the most frequent): a lower bound."""
    words = label_words(task)
    return 100 * sum(k for a, k in figures[task]["top answers"] if a.split()[:1] and a.split()[0] in words) / n


def label_first_text(groups: list[dict], name: str, floors: dict) -> str:
    """Per model, the lower bound of its answers that start with a label word of the question, on each renaming;
    and the group's most frequent answers that start with neither, their counts lower bounds too (summed over the
    answers each model's figures keep)."""
    found = group_named(groups, name)
    kept = max(len(m[t]["top answers"]) for _, m in found for t in RENAMED)
    per = [label + " " + " and ".join(f"≥ {num(label_first(m, t, floors[t]['examples']))}%" for t in RENAMED)
           for label, m in found]
    other: Counter = Counter()
    for _, m in found:
        for t in RENAMED:
            other.update({a: k for a, k in m[t]["top answers"]
                          if not (a.split()[:1] and a.split()[0] in label_words(t))})
    top = ", ".join(f'"{a}" {k}' for a, k in other.most_common(3))
    return (f"An answer that starts with one of the question's two label words takes, of the reviews "
            f"({' and '.join(RENAMED.values())}): {'; '.join(per)} (lower bounds: the record keeps each model's "
            f"{kept} most frequent answers). Their most frequent answers that start with neither label, over the "
            f"{len(found)} models and both renamings (at least: from the top {kept} of each model): {top}.")


def decoding(record: dict) -> str:
    """Greedy decoding and its step limit, as the record holds it."""
    steps = (record.get("decoding") or {}).get("max_answer_length")
    limit = f"the model's {steps}-step limit" if steps else "the model's step limit (not recorded)"
    return f"greedy, up to {limit} (`model.max_answer_length`); no task-specific length cap and no label list"


def machines(record: dict) -> str:
    """Each group's machine (the record's `default_machine` for a group that names none)."""
    return "; ".join(f"{g['name']}: `{key}`, {records.describe_machine(record['machines'][key])}"
                     for g in record["groups"] for key in [g.get("machine") or record["default_machine"]])


def values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/zero_shot.md."""
    record = record or records.load("zero_shot")
    floors = floors if floors is not None else records.floors()
    groups = record["groups"]
    verdict_table, heads = verdicts(groups, floors)
    out = {"plan_table": planned.section("zero_shot"), "plan_min_seeds": str(records.load("plan")["min_seeds"]),
           "plan_assumed": records.load("plan")["assumed_one_side"], "date": record["date"], "machine": machines(record),
           "source": record["source"], "verdict_table": verdict_table, "verdict_summary": summary(heads),
           "floor": num(floors["sst.happy_angry"]["floor"]), "floor_answerer": floors["sst.happy_angry"]["answerer"],
           "chance": num(floors["sst.happy_angry"]["floors"]["random candidate"])}
    out["models_total"] = str(sum(len(g["models"]) for g in groups))
    for i, group in enumerate(groups):
        out[f"models_{i}"] = str(len(group["models"]))
        out[f"table_{i}"] = group_table(group)
        out[f"command_{i}"] = group["command"]
        out[f"answers_{i}"] = top_answers(group)
    for short, task in (("ha", "sst.happy_angry"), ("su", "sst.supportive_unsupportive")):
        out[f"first_alone_{short}_low"], out[f"first_alone_{short}_high"] = span(groups, "SST alone", task,
                                                                                  "first word right")
        out[f"first_t3_{short}_low"], out[f"first_t3_{short}_high"] = span(groups, "Table 3 five-task models", task,
                                                                            "first word right")
    first = first_word_floor(groups, "SST alone", "sst.happy_angry", floors)
    out["first_alone_ha_floor"], out["first_alone_ha_above"] = first["floor"], first["above"]
    out["stops_alone_su_low"], out["stops_alone_su_high"] = span(groups, "SST alone", "sst.supportive_unsupportive",
                                                                  "stops")
    out["alone_su_near"] = near_trained(groups, "SST alone", "sst.supportive_unsupportive")
    out["mwsc_stops"] = stops_text(groups, "SST + MWSC")
    out["mwsc_lean"] = lean_text(groups, "SST + MWSC", floors)
    out["t3_labels"] = label_first_text(groups, "Table 3 five-task models", floors)
    out["decoding"] = decoding(record)
    return out


def index_values(record: dict | None = None, floors: dict | None = None) -> dict[str, str]:
    """The figures of README.md's index line (experiments/results/readme.py): the page's, the verdicts' tally and
    each renaming's first-word shares against a constant first word's."""
    record = record or records.load("zero_shot")
    floors = floors if floors is not None else records.floors()
    out = {**values(record, floors), "verdict_tally": tally(verdicts(record["groups"], floors)[1])}
    found = {t: first_word_floor(record["groups"], "SST alone", t, floors) for t in RENAMED}
    shares = list(dict.fromkeys(f["floor"] for f in found.values()))
    out["constant_first_word"] = f"the {' and '.join(shares)}% a constant first word gets at most"
    out["first_alone_above"] = ", ".join(f"{f['short']} on {RENAMED[t].replace(' / ', '/')}" for t, f in found.items())
    out["first_alone_above"] += "".join(f"; on {RENAMED[t].replace(' / ', '/')} {f['gives']}"
                                        for t, f in found.items() if f["gives"])
    return out
