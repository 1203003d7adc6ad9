"""experiments/results/grid_runs.py: the grid's exported Table 3 and zero-shot runs into their records and onto
the pages. The run folders under tests/fixtures/grid_export/ are what experiments/grid.sh exported from a real
rehearsal on the CPU (experiments/grid.sh's header: a tiny model, a tiny budget, 100 validation rows a task),
as they came back."""
from __future__ import annotations

import json
import shutil

import pytest

from experiments.results import examples, grid_runs, records, runs, table3, zero_shot
from tests.conftest import ROOT

EXPORT = ROOT / "tests" / "fixtures" / "grid_export"
TABLE3 = ("table3-fully_joint-s123", "table3-anti_curriculum-s123")
ZERO_SHOT = ("zero-shot-sst-s123", "zero-shot-sst-s7")


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A copy of the committed records (and the zero-shot figures beside the pages) that the conversion writes to."""
    shutil.copytree(records.RECORDS, tmp_path / "records")
    for path in records.RESULTS.glob("zero_shot_*.json"):
        shutil.copy2(path, tmp_path / path.name)
    monkeypatch.setattr(records, "RESULTS", tmp_path)
    monkeypatch.setattr(records, "RECORDS", tmp_path / "records")
    monkeypatch.setattr(examples, "DIR", tmp_path / "records" / "examples")
    records.load.cache_clear()
    yield tmp_path
    records.load.cache_clear()


def convert(record: str, *names: str) -> None:
    runs.main([record, *(str(EXPORT / n) for n in names), "--machine", "rehearsal",
               "--machine-file", str(EXPORT / "machine.json")])
    records.load.cache_clear()


def test_table3_runs_come_back_with_the_best_models_scores_curves_and_per_example_records(here):
    path = here / "records" / "table3.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "runs": []}))  # the older runs removed first
    convert("table3", *TABLE3)
    record = records.load("table3")
    assert records.check_record(record) == []
    new = {r["name"]: r for r in record["runs"] if r["machine"] == "rehearsal"}
    assert set(new) == set(TABLE3) and len(record["runs"]) == 2
    curve = json.loads((EXPORT / TABLE3[1] / "curve.json").read_text())
    best = max(curve["curve"], key=lambda p: sum(p["headlines"].values()))
    run = new[TABLE3[1]]
    assert run["strategy"] == "anti_curriculum" and run["mlflow_run"] is None and "squad_dev_first" in run["phases"]
    assert run["scores"] == {t: round(best["headlines"][t], 1) for t in table3.TASKS} and run["cell"] == "best"
    assert run["best_iteration"] == examples.read(EXPORT / TABLE3[1] / examples.FILE)["iteration"] == best["iteration"]
    assert set(run["still_rising"]) == set(table3.TASKS) and run["commit"] == json.loads(
        (EXPORT / "machine.json").read_text())["commit"]
    assert (here / "records" / "examples" / "table3" / f"{TABLE3[0]}.json.gz").is_file()
    assert (record["iterations"], record["val_every"]) == (48, 6)  # every run from the grid: its budget and rounds
    assert (f"| {TABLE3[1]} | - | squad_dev_first from iteration 0; round_robin from iteration 6 | 0.5 | - / 14.0 |"
            in table3.runs_table(record))
    machine = json.loads((EXPORT / "machine.json").read_text())
    machine = {k: v for k, v in machine.items() if k in records.MACHINE_FIELDS}
    assert record["machines"]["rehearsal"] == machine
    said = table3.cell_text(record)["cell_rule"]  # the page's rule (two strategies only here: no whole page)
    assert said.startswith("a cell is each run's best model of its 8 validations, chosen by the sum")
    assert "a best-of-validation figure, one run per seed" in said
    assert table3.validation_text(record, records.floors("table3")).startswith("Validation every 6 iterations on")


def test_table3_runs_beside_older_last_round_runs_are_refused_and_nothing_written(here):
    """The grid's runs are each run's best model; the committed runs are last rounds: one table mixing the two would
    put best-of-validation cells under a rule that says "the last round"."""
    path = here / "records" / "table3.json"
    before = path.read_text()
    with pytest.raises(SystemExit, match="would mix last-round cells .*table3-curriculum-s7.* with best-of-validation"):
        convert("table3", *TABLE3)  # four older runs would stay beside the two brought back
    assert path.read_text() == before and not (here / "records" / "examples" / "table3").exists()


def test_zero_shot_groups_are_made_of_the_runs_brought_back(here):
    before = {g["name"]: g for g in records.load("zero_shot")["groups"]}["SST + MWSC"]
    convert("zero_shot", *ZERO_SHOT, *TABLE3)
    record = records.load("zero_shot")
    groups = {g["name"]: g for g in record["groups"]}
    alone = groups["SST alone"]
    assert alone["models"] == [["zero-shot-sst-s123", "SST, seed 123"], ["zero-shot-sst-s7", "SST, seed 7"]]
    assert "--task sst --iterations 12 " in alone["command"] and "train.seed=$s " in alone["command"]
    assert set(alone["still_rising"]) == {"zero-shot-sst-s123", "zero-shot-sst-s7"}  # from each model's curve
    assert all(isinstance(v, bool) for v in alone["still_rising"].values())
    assert [m for m, _ in groups[grid_runs.TABLE3_GROUP]["models"]] == list(TABLE3)
    assert "--task" not in groups[grid_runs.TABLE3_GROUP]["command"]  # experiments/plan.py plans no runs of its own
    assert groups["SST + MWSC"] == before  # no run of that group brought back: untouched
    figures = records.load("zero_shot_seeds")
    assert set(figures) == set(ZERO_SHOT) and set(figures["zero-shot-sst-s7"]) == set(zero_shot.RENAMED) | {"sst"}
    kept = examples.load("zero_shot/zero_shot_seeds", "zero-shot-sst-s7")
    assert kept["tasks"]["sst"]["headline"] == pytest.approx(figures["zero-shot-sst-s7"]["sst"]["em"], abs=1e-3)
    text = zero_shot.values(record)
    assert "SST, seed 7" in text["table_0"] and "fully joint, seed 123" in text["table_2"]


def test_a_folder_that_was_not_asked_the_renamed_questions_is_refused_and_nothing_written(here, tmp_path):
    bare = tmp_path / "zero-shot-sst-s5"
    shutil.copytree(EXPORT / ZERO_SHOT[0], bare)
    (bare / grid_runs.FIGURES).unlink()
    before = (here / "records" / "zero_shot.json").read_bytes()
    with pytest.raises(SystemExit, match="zero-shot-sst-s5.*grid.sh"):
        runs.main(["zero_shot", str(EXPORT / ZERO_SHOT[1]), str(bare)])
    assert (here / "records" / "zero_shot.json").read_bytes() == before
    with pytest.raises(SystemExit, match="not Table 3's five tasks"):
        runs.main(["table3", str(EXPORT / ZERO_SHOT[1])])
