"""experiments/results/pending.py: runs at a new budget wait, whole, until the plan's seeds are all in."""
from __future__ import annotations

import json

import pytest

from experiments import plan as plan_module
from experiments.results import examples, pending, records, runs, table2

VARIANTS = table2.VARIANTS


def folder_of(tmp_path, variant: str, seed: int, iterations: int, best: float):
    """A finished single_task.py run folder of WOZ with its per-example record (its headline: `best`)."""
    folder = tmp_path / f"runs-{iterations}" / f"woz.en-{variant}-s{seed}"
    folder.mkdir(parents=True)
    curve = [{"iteration": iterations // 12 * i, "minutes": 1.0 * i, "headline": best * i / 12} for i in range(1, 13)]
    (folder / "curve.json").write_text(json.dumps({
        "task": "woz.en", "seed": seed, "variant": variant, "iterations": iterations, "minutes": 2.0,
        "overlay": ["infra/params/glove.yaml"], "overrides": [f"model.variant={variant}", f"train.seed={seed}"],
        "load_end": [1.0, 1.0, 1.0], "curve": curve}), encoding="utf-8")
    values = [[100.0], [0.0]] if best < 75 else [[100.0], [100.0]]
    examples.write(folder / examples.FILE, examples.run_record(folder.name, iterations, {
        "woz.en": examples.task_record("woz.en", "em", [{"id": "a"}, {"id": "b"}], {"kind": "mean", "values": values})}))
    return folder


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A records folder holding a Table 2 record of WOZ at 1,800 iterations (seeds 123 and 7, every variant, each
    with its per-example record) and a plan that asks 2 seeds x 3,600."""
    monkeypatch.setattr(records, "RECORDS", tmp_path / "records")
    monkeypatch.setattr(examples, "DIR", tmp_path / "records" / "examples")
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "table2.json").write_text(json.dumps(
        {"machines": {}, "iterations": {"woz.en": 1800}, "runs": []}))
    (tmp_path / "records" / "zero_shot.json").write_text(json.dumps({"groups": []}))
    (tmp_path / "records" / "plan.json").write_text(json.dumps(
        {"seeds": [123, 7, 11], "planned_runs": {"table2": {"woz.en": {"seeds": 2, "iterations": 3600}}}}))
    machine = {"cpu": "cpu", "cores": 2, "bf16_units": True, "gpu": None}
    records.load.cache_clear()  # records.load keeps what it read: these tests change the records they read
    runs.add("table2", [folder_of(tmp_path, v, s, 1800, 70.0) for s in (123, 7) for v in VARIANTS], "xeon",
             "aaa1111", machine)
    yield tmp_path, machine
    records.load.cache_clear()


def test_a_run_at_another_budget_waits_and_a_task_without_runs_does_not():
    record = {"iterations": {"woz.en": 1800}, "runs": [{"task": "woz.en", "iterations": 1800}]}
    assert pending.waits(record, {"task": "woz.en", "iterations": 3600})
    assert not pending.waits(record, {"task": "woz.en", "iterations": 1800})
    assert not pending.waits(record, {"task": "srl", "iterations": 4800})


def test_runs_wait_until_the_plans_seeds_are_all_in_then_replace_the_tasks_runs_at_once(home, capsys):
    tmp_path, machine = home
    longer = [folder_of(tmp_path, v, s, 3600, 80.0) for s in (123, 7) for v in VARIANTS]
    record = runs.add("table2", longer[:5], "xeon", "bbb2222", machine)
    assert {r["iterations"] for r in record["runs"]} == {1800} and len(record["runs"]) == 8
    assert record["pending"]["woz.en"]["iterations"] == 3600 and len(record["pending"]["woz.en"]["runs"]) == 5
    assert "3 more the plan asks: satt-s7, catt-s7, qptr-s7" in capsys.readouterr().out
    assert examples.load("table2", "woz.en-s2s-s123")["tasks"]["woz.en"]["headline"] == 50.0  # the 1,800 run's
    assert pending.pending_dir().joinpath("woz.en-s2s-s123.json.gz").is_file()
    again = runs.add("table2", longer[4:5], "xeon", "bbb2222", machine)  # the same run twice: once in pending
    assert len(again["pending"]["woz.en"]["runs"]) == 5

    record = runs.add("table2", longer[5:], "xeon", "bbb2222", machine)
    assert "pending" not in record and {r["iterations"] for r in record["runs"]} == {3600}
    assert len(record["runs"]) == 8 and {r["commit"] for r in record["runs"]} == {"bbb2222"}
    old = record["replaced"]["woz.en at 1,800 iterations"]
    assert len(old["runs"]) == 8 and "3,600" in old["why"]
    assert examples.load("table2", "woz.en-s2s-s123")["tasks"]["woz.en"]["headline"] == 100.0  # now the 3,600 run's
    moved = examples.read(examples.DIR / "table2" / "replaced" / "woz.en-s2s-s123-1800.json.gz")
    assert moved["tasks"]["woz.en"]["headline"] == 50.0
    assert list(pending.pending_dir().iterdir()) == []
    assert json.loads((records.RECORDS / "table2.json").read_text()) == record


def test_a_new_plan_budget_replaces_what_waited_at_the_old_one(home):
    tmp_path, machine = home
    runs.add("table2", [folder_of(tmp_path, "s2s", 123, 3600, 80.0)], "xeon", "bbb2222", machine)
    record = runs.add("table2", [folder_of(tmp_path, "satt", 123, 7200, 81.0)], "xeon", "ccc3333", machine)
    assert record["pending"]["woz.en"]["iterations"] == 7200
    assert [r["name"] for r in record["pending"]["woz.en"]["runs"]] == ["woz.en-satt-s123"]


def test_the_grid_skips_runs_recorded_or_waiting_at_the_planned_budget(home):
    tmp_path, machine = home
    runs.add("table2", [folder_of(tmp_path, "s2s", 123, 3600, 80.0)], "xeon", "bbb2222", machine)
    records.load.cache_clear()
    lines = plan_module.run_lines(records.load("plan"))
    assert "table2 woz.en s2s 123 3600" not in lines and "table2 woz.en satt 123 3600" in lines
    assert len(lines) == 7


def test_the_page_says_what_waits_and_how_much_more_the_plan_asks(home):
    tmp_path, machine = home
    runs.add("table2", [folder_of(tmp_path, v, 123, 3600, 80.0) for v in VARIANTS], "xeon", "bbb2222", machine)
    records.load.cache_clear()
    text = table2.pending_text(records.load("table2"), records.load("plan"))
    assert text.startswith("WOZ at 3,600 iterations, the plan's budget: 4 runs of seed 123 in (4 of them still rising "
                           "over the last third of their curves, eval.verdict.still_rising), 4 more to come")
    assert table2.pending_text({"runs": []}, records.load("plan")).startswith("none")


def test_runs_at_a_budget_the_plan_does_not_ask_are_never_promoted():
    record = {"iterations": {"woz.en": 1800}, "runs": [{"task": "woz.en", "iterations": 1800, "name": "x"}],
              "pending": {"woz.en": {"iterations": 900, "runs": [{"name": "y", "variant": "s2s", "seed": 1}]}}}
    plan = {"seeds": [1], "planned_runs": {"table2": {}}}
    assert pending.promote(record, plan, VARIANTS) == ([], []) and "woz.en" in record["pending"]
