"""experiments/results/precision.py: the SST recipe's spread is over distinct fp32 runs of the recipe (MQAN under
either name); verdicts get the record's rising flags; cross-references are checked against their records."""
from __future__ import annotations

import copy

from experiments.results import precision, records


def run(name, precision_, seed, em, out=None, variant=None):
    command = "experiments/single_task.py run --task sst" + (f" --out {out}" if out else "")
    found = {"name": name, "task": "sst", "precision": precision_, "seed": seed, "command": command,
             "scores": {"sst": em}}
    return found | ({"variant": variant} if variant else {})


def test_each_fp32_mqan_run_counts_once_and_bf16_or_other_variants_not_at_all():
    zero_shot = records.load("zero_shot_seeds")
    group = next(g for g in records.load("zero_shot")["groups"] if g["name"] == "SST alone")
    shared = group["models"][0][0]  # a precision run in the folder of the zero-shot page's first model: one run
    record = {"runs": [run("a", "fp32", 123, 80.0, out=shared), run("b", "bf16", 123, 90.0,
                                                                     out="checkpoints/precision/sst-bf16"),
                       run("c", "fp32", 7, 82.0), run("d", "fp32", 11, 83.0, variant="qptr"),
                       run("e", "fp32", 11, 99.0, variant="catt")]}
    ems = precision.sst_ems(record)
    others = [zero_shot[k]["sst"]["em"] for k, _ in group["models"][1:]]
    assert sorted(ems) == sorted([80.0, 82.0, 83.0, *others])  # qptr is MQAN (an alias); catt is not


def test_the_committed_spread_is_over_the_distinct_fp32_runs():
    # the precision page's three fp32 runs and the zero-shot page's five single-task SST models (experiments/grid.sh)
    assert precision.sst_spread().endswith("EM over 8 fp32 runs")


def test_the_verdict_gets_the_records_rising_flags_and_says_when_they_are_unknown():
    record, floors = copy.deepcopy(records.load("precision")), records.floors()
    table, _ = precision.verdict_table(record, floors)
    sst = next(line for line in table.splitlines() if line.startswith("| sst"))
    assert "**inconclusive**: whether a side's curve still rose is unknown" in sst
    assert precision.ends_at_best(record, "srl").startswith("The record keeps no curves")
    for r in record["runs"]:
        r["still_rising"] = r["task"] == "sst" and r["seed"] == 7
    table, heads = precision.verdict_table(record, floors)
    assert "sst not tested" in heads and "still rising over the last third" in table
    assert precision.ends_at_best(record, "srl") == "0 of 2 curves were still rising at the end (eval/verdict.py's rule)"


def test_the_seed_11_run_is_compared_with_table2s_run_of_that_name():
    record, table2 = records.load("precision"), copy.deepcopy(records.load("table2"))
    said = precision.table2_note(record, table2)
    assert "Table 2 now holds another run of that command (commit ae10529: 81.8 EM, against 82.1 here)" in said
    ours = next(r for r in record["runs"] if r["name"] == "sst-qptr-s11")
    theirs = next(r for r in table2["runs"] if r["name"] == "sst-qptr-s11")
    theirs.update(commit=ours["commit"], params_digest=ours["params_digest"])
    assert precision.table2_note(record, table2).endswith(": the run Table 2 holds")


def test_paper_size_bf16_is_read_from_speed_records():
    said = precision.paper_size_bf16()
    assert "train squad: slower in every round" in said and "decode sst: faster in every round" in said
