"""experiments/floors.py: the floors record from the raw corpora through the project's readers and `deca
prepare`'s per-example step; WOZ's no change of state checked against the raw dialogues themselves."""
from __future__ import annotations

import json

import pytest

from experiments import floors
from experiments.results import records
from tests.conftest import FIXTURE_CORPORA


def empty_state_share(path) -> float:
    """From the raw WOZ file, independently of the readers: the share of turns whose cumulative inform state is
    empty, where a tracker that never changes its state is right under joint goal EM."""
    empty = total = 0
    for dialogue in json.loads(path.read_text(encoding="utf-8")):
        state = {}
        for turn in dialogue["dialogue"]:
            for item in turn["belief_state"]:
                if item.get("act") == "inform":
                    for slot, value in item["slots"]:
                        state[slot.lower()] = " ".join(value.lower().split())
            empty += not state
            total += 1
    return 100.0 * empty / total


def test_fixture_floors_are_the_highest_of_each_task_and_woz_follows_the_raw_dialogues():
    sets = floors.compute(FIXTURE_CORPORA, tasks=("sst", "schema", "woz.en", "srl"), table3=None,
                          transfer=False)
    assert set(sets) == {"validation"}
    for task, entry in sets["validation"].items():
        assert entry["examples"] > 0 and entry["floor"] == max(entry["floors"].values()), task
        assert entry["floors"][entry["answerer"]] == entry["floor"] and entry["rows"] == "all"
    woz = sets["validation"]["woz.en"]["floors"]["no change of state"]
    assert woz == pytest.approx(empty_state_share(FIXTURE_CORPORA / "woz" / "woz_validate_en.json"), abs=1e-3)
    assert "first candidate" in sets["validation"]["schema"]["floors"]


def test_table3_params_point_the_custom_task_at_the_corpora(tmp_path):
    tasks, limit, custom = floors.table3_params(tmp_path)
    assert tasks[0] == "squad_dev" and limit == 500
    assert custom["squad_dev"].files["validation"] == str(tmp_path / "squad" / "dev-v1.1.json")
    bad = tmp_path / "t3.yaml"
    bad.write_text("train: {tasks: [sst]}\n", encoding="utf-8")
    with pytest.raises(Exception, match="max_val_examples"):
        floors.table3_params(tmp_path, bad)


@pytest.mark.slow
def test_the_committed_record_is_what_the_real_corpora_give(shared_corpora, tmp_path):
    """Rerun on the real corpora: every floor of docs/results/records/floors.json, and its fields."""
    out = tmp_path / "floors.json"
    assert floors.main(["--corpora", str(shared_corpora), "--out", str(out)]) == 0
    fresh, committed = json.loads(out.read_text()), records.load("floors")
    assert fresh["sets"] == committed["sets"]
    assert {"command", "commit", "machine", "date"} <= set(committed)
    assert committed["sets"]["validation"]["srl"]["floor"] == pytest.approx(30.78, abs=0.01)  # the 30.8
    assert committed["sets"]["table3"]["squad_dev"]["floor"] == pytest.approx(9.58, abs=0.01)  # and its 9.6
