"""docs/results/contamination.md: which validation examples of the real corpora overlap training data
(`deca contamination`, issue 36), from docs/results/records/contamination.json."""
from __future__ import annotations

from experiments.results import records
from experiments.results.render import table

PAGE = "docs/results/contamination.md"
TEMPLATE = "contamination.md"
FIELDS = ("context", "question", "answer")
NAMES = {"sst": "SST", "schema": "MWSC", "woz.en": "WOZ", "srl": "QA-SRL"}
QUOTED = 2  # texts quoted per field from the record's most frequent


def pct(count: int, total: int) -> str:
    return f"{100 * count / total:.1f}%" if total else "-"


def overall_table(matrix: dict) -> str:
    """Per evaluation split: examples, share flagged by field, in any field, by a real 13-gram."""
    rows = []
    for key, r in matrix.items():
        n = r["examples"]
        rows.append((f"`{key}`", f"{n:,}", *(pct(r["by_field"][f], n) for f in FIELDS), pct(r["flagged"], n),
                     pct(r["by_field"]["ngram"], n)))
    return table(("evaluation split", "examples", "context", "question", "answer", "any", "13-gram"), rows)


def matrix_table(result: dict) -> str:
    """The task x task matrix: a cell is the share of the evaluation split's examples overlapping the training
    task in any field (its 13-gram share in brackets); '·' for none."""
    train = result["train_tasks"]
    rows = []
    for key, r in result["matrix"].items():
        n, cells = r["examples"], []
        for t in train:
            c = r["train"][t]
            cells.append("·" if not c["any"]["examples"] else f"{pct(c['any']['examples'], n)} ({pct(c['ngram']['examples'], n)})")
        rows.append((f"`{key}`", *cells))
    return table(("evaluation split \\ training data", *(f"`{t}`" for t in train)), rows)


def common_table(result: dict) -> str:
    """Per evaluation split and its own training task: examples matching only common texts."""
    rows = []
    for key, r in result["matrix"].items():
        own = r["train"].get(r["task"])
        if own:
            rows.append((f"`{key}`", pct(own["common_only"]["examples"], r["examples"]),
                         f"{result['common_thresholds'][r['task']]:,}"))
    return table(("evaluation split", "only common texts of its own task", "common from (training examples)"), rows)


def values(record: dict | None = None) -> dict[str, str]:
    """The placeholders of templates/contamination.md."""
    record = record or records.load("contamination")
    result = record["result"]
    m = result["matrix"]

    def cell(split: str, train: str, what: str) -> str:
        return f"{m[split]['train'][train][what]['examples']:,}"

    return {"date": record["date"], "commit": record["commit"], "data": record["data"],
            "machine": f"{record['machine']}; {cpu_said(record)}",
            "command": record["command"], "seconds": f"{record['seconds']:.0f}",
            "examples": f"{record['counters']['examples']:,}", "n": str(result["n"]),
            "common_share": f"{100 * result['common_share']:g}%", "common_min": str(result["common_min"]),
            "overall_table": overall_table(m), "matrix_table": matrix_table(result), "common_table": common_table(result),
            "woz_answer": cell("woz.en/validation", "woz.en", "answer"),
            "woz_ngram": cell("woz.en/validation", "woz.en", "ngram"),
            "srl_question": cell("srl/validation", "srl", "question"),
            "srl_answer": f"{m['srl/validation']['by_field']['answer']:,}",
            "srl_ngram": cell("srl/validation", "srl", "ngram"),
            "schema_answer": f"{m['schema/validation']['by_field']['answer']:,}",
            "schema_own": cell("schema/validation", "schema", "answer"),
            "schema_srl": cell("schema/validation", "srl", "answer"),
            "schema_examples": f"{m['schema/validation']['examples']:,}",
            "sst_examples": f"{m['sst/validation']['examples']:,}", **match_values(record), **plain_values(result),
            "cost_corpora": record["cost"]["corpora"], "cost_machine": record["cost"]["machine"],
            "cost_examples": f"{record['cost']['examples']:,}", "cost_train_ngrams": f"{record['cost']['train_ngrams']:,}",
            "cost_prepare": f"{record['cost']['prepare_seconds']:.0f}",
            "load_prepare": record["cost"]["load"]["prepare"],
            "cost_contamination": f"{record['cost']['contamination_seconds']:.0f}",
            "cost_ratio": f"{record['cost']['contamination_seconds'] / record['cost']['prepare_seconds']:.1f}",
            **cost_values(record["cost"])}


def heading(split: dict, n_gram: int) -> str:
    """A split's overlap in one line, from its counts: 'no overlap', or the share flagged, the fields it is in
    and the share matched by a 13-gram."""
    n, by_field = split["examples"], split["by_field"]
    if not split["flagged"]:
        return "no overlap"
    fields = [f"{f}s" for f in FIELDS if by_field[f]]
    listed = fields[0] if len(fields) == 1 else f"{', '.join(fields[:-1])} and {fields[-1]}"
    return (f"{pct(split['flagged'], n)} of the validation examples overlap training data (in their {listed}), "
            f"{pct(by_field['ngram'], n)} by a {n_gram}-gram")


def untouched(split: dict, fields: tuple[str, ...]) -> str:
    """'no context or question overlaps', or the count of each of `fields` that overlaps (where not zero)."""
    counts = {f: split["by_field"][f] for f in fields}
    if not any(counts.values()):
        return f"no {' or '.join(fields)} overlaps"
    return ", ".join(f"{c:,} {f}{'s overlap' if c > 1 else ' overlaps'}" for f, c in counts.items() if c)


def plain_values(result: dict) -> dict[str, str]:
    """The headings and counts of 'In plain words', from the matrix."""
    m = result["matrix"]
    sst, schema = m["sst/validation"], m["schema/validation"]
    common, n = sst["train"]["sst"]["common_only"]["examples"], sst["examples"]
    reviews = sst["by_field"]["ngram"]
    shares = sorted(m.values(), key=lambda r: -r["flagged"] / r["examples"])
    return {**{f"{k.split('/')[0].replace('.en', '')}_heading": heading(r, result["n"]) for k, r in m.items()},
            "sst_ngram_said": (f"{reviews:,} validation review{'s share' if reviews > 1 else ' shares'}" if reviews
                               else "No validation review shares"),
            "sst_common_said": f"all {common:,}" if common == n else f"{common:,} of {n:,}",
            "schema_untouched": untouched(schema, ("context", "question")),
            "flagged_shares": ", ".join(f"{NAMES.get(r['task'], r['task'])} {pct(r['flagged'], r['examples'])}"
                                        for r in shares)}


def quotes(pairs: list, k: int = QUOTED) -> str:
    """'"thank you ." (8 examples), "goodbye ." (6)': the record's most frequent texts with their counts."""
    said = [f'"{text}" ({count}{" examples" if not i else ""})' for i, (text, count) in enumerate(pairs[:k])]
    return ", ".join(said) or "none"


def ngram_where(split: dict) -> str:
    """In which field the n-gram matches are: 'all in the context', or '20 in the context, 8 in the answer'."""
    found = {f: c for f, c in split["ngram_by_field"].items() if c}
    if len(found) == 1:
        return f"all in the {next(iter(found))}"
    return ", ".join(f"{c} in the {f}" for f, c in found.items()) or "in no field"


def distinct(split: dict, noun: str) -> str:
    """The n-gram-matched texts: 'one sentence, "..."' or '28 distinct requests, e.g. "..."'."""
    texts = list(dict.fromkeys(x["text"] for x in split["ngram_texts"]))
    if len(texts) == 1:
        return f'one {noun}, "{texts[0]}"'
    return f'{len(texts)} distinct {noun}s, e.g. "{texts[0]}"' if texts else f"no {noun}"


def match_values(record: dict) -> dict[str, str]:
    """The placeholders read from the record's `matches` (which field a 13-gram match is in, the texts)."""
    matches, m = record["matches"], record["result"]["matrix"]
    woz, srl = matches["splits"]["woz.en/validation"], matches["splits"]["srl/validation"]
    woz_context = m["woz.en/validation"]["by_field"]["context"]
    clean = [NAMES.get(r["task"], r["task"]) for r in m.values() if not r["by_field"]["ngram"]]
    top = max(m.values(), key=lambda r: r["by_field"]["ngram"] / r["examples"])
    return {"woz_context": f"{woz_context:,}", "woz_context_long": f"{woz['ngram_by_field']['context']:,}",
            "woz_context_whole": f"{woz_context - woz['ngram_by_field']['context']:,}",
            "woz_context_quotes": quotes(woz["whole_texts"]["context"]),
            "woz_answer_quotes": quotes(woz["whole_texts"]["answer"]), "woz_ngram_where": ngram_where(woz),
            "woz_ngram_texts": distinct(woz, "user turn"),
            "srl_question_quotes": quotes(srl["whole_texts"]["question"]),
            "srl_answer_quotes": quotes(srl["whole_texts"]["answer"]), "srl_ngram_where": ngram_where(srl),
            "srl_ngram_texts": distinct(srl, "sentence"),
            "schema_answer_quotes": quotes(matches["splits"]["schema/validation"]["whole_texts"]["answer"]),
            "none_in": " and ".join(clean) or "no split", "max_ngram_pct": pct(top["by_field"]["ngram"], top["examples"]),
            "max_ngram_name": NAMES.get(top["task"], top["task"]), "rerun_date": matches["date"],
            "rerun_commit": matches["commit"], "rerun_seconds": f"{matches['process_seconds']:.1f}",
            "rerun_load": f"{matches['load_before'][0]:.1f}", "rerun_machine": cpu_said(matches),
            "rerun_command": matches["command"]}


def cpu_said(found: dict) -> str:
    """A run's CPU model and bf16/AMX units as its record holds them, or that it holds none."""
    cpu, units = found.get("cpu"), found.get("units")
    if not cpu:
        return "CPU model and bf16/AMX units not recorded"
    return f"{cpu}, {', '.join(units) if units else 'bf16/AMX units not recorded'}"


def load_start(load: str) -> float | None:
    """The load average at a run's start, from the record's 'before -> after' text."""
    head = load.split("->")[0].strip()
    try:
        return float(head)
    except ValueError:
        return None


def cost_load_note(cost: dict) -> str:
    """Whether the cost section's runs began with a load above the machine's cores: those give no headline."""
    starts = {"prepare": cost["load"]["prepare"], "contamination": cost["load"]["contamination"],
              "the first implementation": cost["load"]["first_implementation"],
              f"the {cost['larger']['corpora']} runs": cost["larger"]["load"]}
    cores = cost.get("cores")
    if cores is None:
        return "The machine's cores are not recorded, so whether these runs were loaded is not known."
    above = {k: v for k, v in starts.items() if (x := load_start(v)) is not None and x > cores}
    if not above:
        return ""
    said = ", ".join(f"{k} {load_start(v):g}" for k, v in above.items())
    who = "Every timed run" if len(above) == len(starts) else "These runs"
    earlier = ("; the load of the first implementation's earlier session is not recorded"
               if "first_implementation_earlier_seconds" in cost and "first_implementation_earlier" not in cost["load"]
               else "")
    return (f"No headline: load above the cores. {who} began with a load above the machine's {cores} cores "
            f"({said}{earlier}): the seconds above are what each run measured, not a measure of the job's cost.")


def cost_values(cost: dict) -> dict[str, str]:
    """The placeholders of the cost section: both measurements of the first implementation against the batched
    job (one run each, on a loaded machine), the larger run, the commands."""
    larger, new = cost["larger"], cost["contamination_seconds"]
    firsts = sorted((cost["first_implementation_seconds"], cost["first_implementation_earlier_seconds"]))
    return {"cost_first": f"{cost['first_implementation_seconds']:.0f}",
            "cost_first_earlier": f"{cost['first_implementation_earlier_seconds']:.0f}",
            "cost_speedup_low": f"{firsts[0] / new:.1f}", "cost_speedup_high": f"{firsts[1] / new:.1f}",
            "load_first": cost["load"]["first_implementation"], "load_new": cost["load"]["contamination"],
            "cost_larger": (f"On {larger['corpora']} ({larger['examples']:,} examples, {larger['train_ngrams']:,} "
                            f"distinct training hashes) prepare took {larger['prepare_seconds']:.0f} s and "
                            f"contamination {larger['contamination_seconds']:.0f} s (load average {larger['load']})."),
            "cost_commands": "\n".join(f"- {c}" for c in cost["commands"]), "cost_load_note": cost_load_note(cost)}
