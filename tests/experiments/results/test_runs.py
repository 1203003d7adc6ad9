"""experiments/results/runs.py: a run folder becomes a complete record run."""
from __future__ import annotations

import json

from experiments.results import records, runs


def test_a_run_folder_becomes_a_record_run_with_every_field(tmp_path):
    folder = tmp_path / "sst-s2s-s11"
    folder.mkdir()
    curve = [{"iteration": 100 * i, "minutes": 0.5 * i, "headline": h} for i, h in enumerate([0.0, 52.9, 80.8, 80.1], 1)]
    (folder / "curve.json").write_text(json.dumps({
        "task": "sst", "seed": 11, "variant": "s2s", "iterations": 400, "overlay": ["infra/params/glove.yaml"],
        "overrides": ["model.variant=s2s", "train.seed=11"], "load_end": [2.0, 1.5, 1.0], "minutes": 2.1,
        "curve": curve}), encoding="utf-8")
    run = runs.from_folder(folder, "here")
    assert records.check_runs([run]) == []
    assert run["scores"] == {"sst": 80.8} and run["best_iteration"] == 300 and run["seed"] == 11
    assert "--val-every 100" in run["command"] and "--set model.variant=s2s" in run["command"]
    assert len(run["params_digest"]) == 16
    other = dict(json.loads((folder / "curve.json").read_text()), overrides=["model.variant=satt", "train.seed=11"])
    assert runs.params_digest(other) != run["params_digest"]


def test_runs_brought_back_join_the_record_with_their_per_example_records(tmp_path, monkeypatch):
    from experiments.results import examples

    test_a_run_folder_becomes_a_record_run_with_every_field(tmp_path)  # writes tmp_path/sst-s2s-s11/curve.json
    folder = tmp_path / "sst-s2s-s11"
    rows = [{"id": str(i), "context": f"s{i}"} for i in range(3)]
    examples.write(folder / examples.FILE, examples.run_record(folder.name, 300, {
        "sst": examples.task_record("sst", "em", rows, {"kind": "mean", "values": [[100.0], [0.0], [100.0]]})}))
    monkeypatch.setattr(records, "RECORDS", tmp_path / "records")
    monkeypatch.setattr(examples, "DIR", tmp_path / "records" / "examples")
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "table2.json").write_text(json.dumps({"machines": {}, "runs": [
        {"name": "sst-s2s-s11", "old": True}, {"name": "sst-s2s-s7"}]}))
    machine = {"cpu": "host", "cores": 16, "bf16_units": None, "gpu": "NVIDIA H100 80GB HBM3"}
    record = runs.add("table2", [folder], "h100", "abc1234", machine)
    assert [r["name"] for r in record["runs"]] == ["sst-s2s-s7", "sst-s2s-s11"] and "old" not in record["runs"][1]
    assert record["machines"]["h100"] == machine and record["runs"][1]["commit"] == "abc1234"
    kept = examples.load("table2", "sst-s2s-s11")
    assert kept["tasks"]["sst"]["headline"] == 66.6667


def test_the_precision_is_in_the_command_and_in_the_digest_where_it_is_not_fp32(tmp_path):
    import hashlib

    folder = tmp_path / "sst-bf16-s7"
    folder.mkdir()
    curve = [{"iteration": 100 * i, "minutes": 0.5 * i, "headline": h} for i, h in enumerate([50.9, 80.1], 1)]
    fp32 = {"task": "sst", "seed": 7, "iterations": 200, "overlay": ["infra/params/glove.yaml"],
            "overrides": ["train.seed=7"], "load_end": [1.0, 1.0, 1.0], "minutes": 1.0, "curve": curve}
    (folder / "curve.json").write_text(json.dumps({**fp32, "precision": "bf16"}), encoding="utf-8")
    bf16 = runs.from_folder(folder, "here")
    assert "--precision bf16 " in bf16["command"] and bf16["precision"] == "bf16"
    (folder / "curve.json").write_text(json.dumps(fp32), encoding="utf-8")  # no precision kept: fp32, the default
    plain = runs.from_folder(folder, "here")
    assert "--precision fp32 " in plain["command"] and plain["params_digest"] != bf16["params_digest"]
    # an fp32 run's digest is the one made before the precision was hashed: the records' digests still hold
    h = hashlib.sha256((records.ROOT / "infra/params/glove.yaml").read_bytes())
    h.update(b"train.seed=7")
    assert plain["params_digest"] == runs.params_digest({**fp32, "precision": "fp32"}) == h.hexdigest()[:16]


def test_no_two_runs_of_the_precision_record_of_different_precisions_share_a_digest():
    found = {}
    for run in records.load("precision")["runs"]:
        if run["params_digest"] is not None:
            found.setdefault(run["params_digest"], set()).add(run["precision"])
            assert f"--precision {run['precision']}" in run["command"] or run["precision"] == "fp32", run["name"]
    assert all(len(p) == 1 for p in found.values()), found


def test_the_machine_file_brings_the_cpus_units_into_the_record(tmp_path, monkeypatch):
    """grid.sh's machine.json names the CPU's bf16/AMX units: the record keeps them (the pages name them)."""
    test_a_run_folder_becomes_a_record_run_with_every_field(tmp_path)
    monkeypatch.setattr(records, "RECORDS", tmp_path / "records")
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "table2.json").write_text(json.dumps({"machines": {}, "runs": []}))
    units = ["avx512_bf16", "amx_bf16", "amx_tile"]
    made = {"cpu": "Intel(R) Xeon(R) Processor", "cores": 2, "bf16_units": True, "gpu": None, "units": units,
            "commit": "abc1234"}
    (tmp_path / "machine.json").write_text(json.dumps(made))
    assert runs.main(["table2", str(tmp_path / "sst-s2s-s11"), "--machine", "xeon", "--machine-file",
                      str(tmp_path / "machine.json")]) == 0
    record = json.loads((tmp_path / "records" / "table2.json").read_text())
    assert record["machines"]["xeon"]["units"] == units and record["runs"][0]["commit"] == "abc1234"
