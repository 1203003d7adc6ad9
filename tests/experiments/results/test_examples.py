"""experiments/results/examples.py: per-example records written compactly and read back; a page's step gets the
clustered two-level interval the bootstrap gives directly when every run kept one, "seed-only interval" when
any run did not."""
from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from eval import clustered
from eval.stats import Sample
from experiments.results import examples, records, render, table2

SCHEMAS = 41  # MWSC's validation: 82 questions, two of each schema


def mwsc_rows() -> list[dict]:
    return [{"id": f"schema{k}-{c}", "context": f"sentence {k} {c}"} for k in range(SCHEMAS) for c in (0, 1)]


def planted_scores(rng: np.random.Generator, accuracy: float) -> np.ndarray:
    """0/100 per question, the two questions of a schema correlated (a schema easy or hard for the model)."""
    easy = rng.random(SCHEMAS) < accuracy
    return 100.0 * np.repeat(easy, 2) * (rng.random(2 * SCHEMAS) < 0.9)


def test_a_record_round_trips_compactly_with_its_clusters(tmp_path):
    rows = mwsc_rows()
    values = planted_scores(np.random.default_rng(0), 0.6)
    entry = examples.task_record("schema", "em", rows, {"kind": "mean", "values": values.reshape(-1, 1)})
    assert entry["cluster_by"] == "schema" and entry["clusters"][:4] == [0, 0, 1, 1]
    assert entry["headline"] == pytest.approx(values.mean()) and all(isinstance(v, int) for v in entry["values"])
    path = examples.write(tmp_path / "run.json.gz", examples.run_record("run", 300, {"schema": entry}))
    assert path.stat().st_size < 1000  # 82 EM scores and their schemas
    back = examples.read(path)
    sample, clusters = examples.side([back], "schema")
    assert sample.point() == pytest.approx(values.mean()) and clusters == entry["clusters"]
    sst = examples.task_record("sst", "em", [{"id": str(i), "context": "same"} for i in range(4)],
                               {"kind": "mean", "values": [[100.0], [0.0], [100.0], [100.0]]})
    assert sst["clusters"] is None and sst["cluster_by"] is None


def test_a_broken_record_is_refused_naming_its_file(tmp_path):
    path = tmp_path / "bad.json.gz"
    examples.write(path, {"version": 1, "tasks": {"schema": {"kind": "mean", "n": 3, "columns": 1, "values": [1]}}})
    with pytest.raises(records.RecordError, match="bad.json.gz: task schema"):
        examples.read(path)
    path.write_bytes(b"not gzip")
    with pytest.raises(records.RecordError, match="unreadable"):
        examples.read(path)


def table2_record() -> dict:
    runs = []
    for variant, value in zip(table2.VARIANTS, (60.0, 70.0, 65.0, 72.0)):
        for seed in (1, 2, 3):
            runs.append({"name": f"schema-{variant}-s{seed}", "task": "schema", "variant": variant, "seed": seed,
                         "curve": [[100, value], [200, value], [300, value]], "scores": {"schema": value + seed},
                         "still_rising": None})
    return {"runs": runs, "iterations": {"schema": 300}, "summaries": {}}


def plant(folder, record: dict, skip: str | None = None) -> dict[str, np.ndarray]:
    """Per-example records of every run but `skip` under folder/table2/; {run: its scores}."""
    rng, rows, planted = np.random.default_rng(7), mwsc_rows(), {}
    for run in record["runs"]:
        scores = planted_scores(rng, run["scores"]["schema"] / 100)
        planted[run["name"]] = scores
        if run["name"] != skip:
            entry = examples.task_record("schema", "em", rows, {"kind": "mean", "values": scores.reshape(-1, 1)})
            examples.write(folder / "table2" / f"{run['name']}.json.gz",
                           examples.run_record(run["name"], 300, {"schema": entry}))
    return planted


def test_planted_records_give_the_clustered_bootstrap_s_own_interval(tmp_path, monkeypatch):
    monkeypatch.setattr(examples, "DIR", tmp_path)
    record = table2_record()
    planted = plant(tmp_path, record)
    text, _, _ = table2.steps(record, {})
    side = {v: Sample.of("mean", *(planted[f"schema-{v}-s{s}"].reshape(-1, 1) for s in (1, 2, 3)))
            for v in ("s2s", "satt")}
    codes = clustered.cluster_codes([r["id"].rsplit("-", 1)[0] for r in mwsc_rows()], 2 * SCHEMAS).tolist()
    direct = clustered.difference(side["s2s"], side["satt"], codes)  # the table's first step, seed 0 as the page
    row = text.splitlines()[2]
    assert f"| {render.interval(direct.interval)} |" in row
    assert direct.method == clustered.CLUSTERED and "clustered by schema" in row and "seed-only" not in row


def test_a_step_with_a_run_lacking_its_record_says_seed_only(tmp_path, monkeypatch):
    monkeypatch.setattr(examples, "DIR", tmp_path)
    record = table2_record()
    plant(tmp_path, record, skip="schema-satt-s2")
    rows = table2.steps(record, {})[0].splitlines()[2:]
    assert "seed-only interval" in rows[0] and "seed-only interval" in rows[1]  # both steps +SAtt is in
    assert "clustered by schema" in rows[2]  # +CAtt -> +QPtr: every run kept its record


def test_the_committed_pages_rows_say_how_their_interval_was_made():
    """A step says "seed-only interval" exactly when a run of either side kept no per-example record (the runs
    made before issue 45), else how the examples were resampled: by its clusters (MWSC's schemas) or one by one
    (SST's sentences)."""
    record = records.load("table2")
    rows = table2.steps(record, records.floors())[0].splitlines()[2:]
    assert len(rows) == 12
    for row in rows:
        task = next(t for t, label in table2.TASKS.items() if row.startswith(f"| {label} |"))
        kept = all(examples.load("table2", r["name"]) is not None for r in record["runs"] if r["task"] == task)
        assert ("seed-only interval" in row) == (not kept), row
        assert ("clustered by" in row or "two-level bootstrap" in row) == kept, row


def test_single_task_keeps_the_best_round_per_example(tmp_path):
    from experiments.single_task import keep_examples

    rows = mwsc_rows()
    values = planted_scores(np.random.default_rng(1), 0.5).reshape(-1, 1)
    recipe = SimpleNamespace(iteration=132, validator=SimpleNamespace(
        rows={"schema": rows}, examples={"schema": {"kind": "mean", "values": values}}))
    keep_examples(tmp_path / "schema-qptr-s5")(recipe)
    found = examples.read(tmp_path / "schema-qptr-s5" / examples.FILE)
    assert found["run"] == "schema-qptr-s5" and found["iteration"] == 132
    assert found["tasks"]["schema"]["headline"] == pytest.approx(values.mean())


def test_a_deca_evaluate_output_becomes_a_record(tmp_path):
    (tmp_path / "predictions").mkdir()
    rows = [{"id": f"q{i}", "context": f"paragraph {i // 3}", "prediction": "x", "stats": [100.0 * (i % 2)]}
            for i in range(9)]
    (tmp_path / "predictions" / "squad_dev.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (tmp_path / "metrics.json").write_text(json.dumps({"iteration": 900, "tasks": {
        "squad_dev": {"headline_metric": "nf1", "headline": 44.4, "n": 9}}}))
    found = examples.from_evaluation("r", tmp_path / "metrics.json", tmp_path / "predictions")
    entry = found["tasks"]["squad_dev"]
    assert entry["cluster_by"] == "paragraph" and entry["clusters"] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert entry["headline"] == pytest.approx(400 / 9) and found["iteration"] == 900
