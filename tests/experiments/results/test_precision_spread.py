"""experiments/results/precision.py: the SST recipe's spread is over distinct fp32 runs of the recipe."""
from __future__ import annotations

from experiments.results import precision, records


def run(name, precision_, seed, em, out=None, variant=None):
    command = "experiments/single_task.py run --task sst" + (f" --out {out}" if out else "")
    found = {"name": name, "task": "sst", "precision": precision_, "seed": seed, "command": command,
             "scores": {"sst": em}}
    return found | ({"variant": variant} if variant else {})


def test_each_fp32_run_counts_once_and_bf16_or_other_variants_not_at_all():
    zero_shot = records.load("zero_shot_seeds")
    group = next(g for g in records.load("zero_shot")["groups"] if g["name"] == "SST alone")
    shared = group["models"][0][0]  # a precision run in the folder of the zero-shot page's first model: one run
    record = {"runs": [run("a", "fp32", 123, 80.0, out=shared), run("b", "bf16", 123, 90.0,
                                                                     out="checkpoints/precision/sst-bf16"),
                       run("c", "fp32", 7, 82.0), run("d", "fp32", 11, 99.0, variant="qptr")]}
    ems = precision.sst_ems(record)
    others = [zero_shot[k]["sst"]["em"] for k, _ in group["models"][1:]]
    assert sorted(ems) == sorted([80.0, 82.0, *others])


def test_the_committed_spread_is_over_the_distinct_fp32_runs():
    # the precision page's two fp32 runs and the zero-shot page's five single-task SST models (experiments/grid.sh)
    assert precision.sst_spread().endswith("EM over 7 fp32 runs")
