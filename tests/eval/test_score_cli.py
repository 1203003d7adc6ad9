"""`deca score` end to end on tiny processed splits written with pyarrow in tmp_path."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support import row, write_split
from deca.cli import main
from tests.eval.helpers import write_predictions

SST = {"dev-0": "positive", "dev-1": "negative", "dev-2": "positive", "dev-3": "negative"}


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # params defaults (eval/metrics.json...) land here, never in the repo
    processed = tmp_path / "processed"
    write_split(processed, "sst", "validation", [row("sst", "validation", k, v) for k, v in SST.items()])
    woz_rows, state = [], {}
    for t, answer in enumerate(["food: thai;", "; phone", "area: north;"]):
        if ":" in answer:
            k, v = answer.rstrip(";").split(": ")
            state[k] = v
        gold = {"dialogue_id": "en_0", "turn": t, "state": dict(state), "requests": []}
        woz_rows.append(row("woz.en", "validation", f"en_0_{t}", answer, gold=gold))
    write_split(processed, "woz.en", "validation", woz_rows, shards=1)
    preds = tmp_path / "preds"
    write_predictions(preds / "sst.jsonl", {**SST, "dev-3": "positive"})  # 3 of 4 right
    write_predictions(preds / "woz.en.jsonl", {"en_0_0": "food: thai;", "en_0_1": "; phone", "en_0_2": "none"})
    return tmp_path, processed, preds


def _run(capsys, *argv):
    defaults = Path(__file__).parents[1] / "fixtures" / "defaults_params.yaml"
    code = main(["score", "--params", str(defaults), "--no-progress", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_task(workspace, capsys):
    tmp, processed, preds = workspace
    code, out, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", preds / "sst.jsonl",
                          "--data", processed, "--metrics-out", tmp / "m.json")
    assert code == 0, err
    result = json.loads(out)
    assert result["task"] == "sst" and result["split"] == "validation" and result["n"] == 4
    assert result["headline"] == {"name": "em", "value": 75.0}
    doc = json.loads((tmp / "m.json").read_text())
    assert doc["tasks"]["sst"]["em"] == 75.0 and doc["tasks"]["sst"]["headline"] == 75.0


def test_predictions_dir_gives_a_partial_decascore_and_a_report(workspace, capsys):
    tmp, processed, preds = workspace
    code, out, err = _run(capsys, "--split", "validation", "--predictions-dir", preds, "--data", processed,
                          "--metrics-out", tmp / "eval" / "metrics.json", "--report", tmp / "report")
    assert code == 0, err
    result = json.loads(out)
    assert result["tasks"] == ["sst", "woz.en"] and result["partial"] is True
    woz = result["results"]["woz.en"]["metrics"]["joint_goal_em"]
    assert woz == pytest.approx(200 / 3)
    assert result["decascore"] == pytest.approx(75.0 + woz)
    doc = json.loads((tmp / "eval" / "metrics.json").read_text())
    assert doc["decascore"] == result["decascore"] and doc["partial"] is True
    report = (tmp / "report" / "report.md").read_text()
    assert "decaScore" in report and "| woz.en | joint_goal_em | 66.67 | 3 |" in report
    assert (tmp / "report" / "headline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_tasks_filter(workspace, capsys):
    tmp, processed, preds = workspace
    code, out, err = _run(capsys, "--split", "validation", "--predictions-dir", preds, "--data", processed,
                          "--tasks", "sst")
    assert code == 0, err
    assert json.loads(out)["tasks"] == ["sst"]
    assert not (tmp / "eval").exists()  # the pipeline's eval/metrics.json is not deca score's to write


def test_missing_ids_are_an_error_with_counts(workspace, capsys):
    tmp, processed, preds = workspace
    write_predictions(preds / "sst.jsonl", {"dev-0": "positive", "nope": "x"})
    code, out, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", preds / "sst.jsonl",
                          "--data", processed, "--metrics-out", tmp / "m.json")
    assert code == 1 and out == ""
    assert "sst.jsonl" in err and "3 of 4 gold ids have no prediction" in err and "'nope'" in err
    assert not (tmp / "m.json").exists()


@pytest.mark.parametrize("line, message", [
    ("{not json", "not valid JSON"),
    ('{"id": "dev-0"}', "missing 'id' or 'prediction'"),
    ('{"id": "dev-0", "prediction": 3}', "'prediction' must be a string"),
    ('{"id": "dev-0", "prediction": "neg\\ud800"}', "field 'prediction': a lone surrogate \\ud800 at character 4"),
    ('{"id": "\\udc80", "prediction": "negative"}', "field 'id': a lone surrogate \\udc80 at character 1"),
    ('{"id": "dev-0", "prediction": ' + "[" * 100_000 + "]" * 100_000 + "}", "JSON nested too deeply"),
])
def test_bad_prediction_lines_name_file_and_line(workspace, capsys, line, message):
    tmp, processed, preds = workspace
    path = preds / "sst.jsonl"
    path.write_text('{"id": "dev-1", "prediction": "negative"}\n' + line + "\n")
    code, _, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", path,
                        "--data", processed)
    assert code == 1
    assert f"{path}:2" in err and message in err and "Traceback" not in err


def test_predictions_that_are_not_utf8_name_the_file_line_and_fix(workspace, capsys):
    tmp, processed, preds = workspace
    path = preds / "sst.jsonl"
    path.write_bytes(b'{"id": "dev-0", "prediction": "positive"}\n'
                     b'{"id": "dev-1", "prediction": "n\xe9gative"}\n')  # Latin-1, not UTF-8
    code, out, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", path,
                          "--data", processed)
    assert code == 1 and out == "" and "Traceback" not in err and "UnicodeDecodeError" not in err
    assert err.splitlines() == [
        f"error: {path}:2: not valid UTF-8 (byte 0xe9 at byte 33 of the line: invalid continuation byte)",
        "  fix: write the file as UTF-8 (`deca evaluate` and `deca predict` do), or convert it, e.g. "
        "`iconv -f LATIN1 -t UTF-8 FILE > FILE.utf8`"]


def test_duplicate_prediction_ids(workspace, capsys):
    tmp, processed, preds = workspace
    path = preds / "sst.jsonl"
    path.write_text('{"id": "dev-1", "prediction": "a"}\n\n{"id": "dev-1", "prediction": "b"}\n')
    code, _, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", path,
                        "--data", processed)
    assert code == 1 and f"{path}:3" in err and "first on line 1" in err


def test_unknown_task_file_and_missing_split(workspace, capsys):
    tmp, processed, preds = workspace
    write_predictions(preds / "sts.jsonl", {"a": "b"})
    code, _, err = _run(capsys, "--split", "validation", "--predictions-dir", preds, "--data", processed)
    assert code == 1 and "sts" in err and "named after no registered task" in err
    (preds / "sts.jsonl").unlink()
    code, _, err = _run(capsys, "--split", "test", "--predictions-dir", preds, "--data", processed)
    assert code == 1 and "no processed Parquet shards" in err and "deca prepare" in err


def test_argument_combinations(workspace, capsys):
    tmp, processed, preds = workspace
    code, _, err = _run(capsys, "--predictions", preds / "sst.jsonl")
    assert code == 1 and "--predictions needs --task" in err
    code, _, err = _run(capsys, "--task", "sst", "--predictions-dir", preds)
    assert code == 1 and "not both" in err


def test_wikisql_execution_accuracy_from_the_raw_dir(tmp_path, monkeypatch):
    from eval.score import score_dir, task_options

    monkeypatch.chdir(tmp_path)
    header = ["Name", "Score"]
    processed = tmp_path / "processed"
    rows = [row("wikisql", "validation", "dev-0", "select name from table where score > 15",
                gold={"sql": {"sel": 0, "agg": 0, "conds": [[1, 1, 15]]}, "header": header, "table_id": "1-2"})]
    write_split(processed, "wikisql", "validation", rows, shards=1)
    db = tmp_path / "raw" / "wikisql" / "data" / "dev.db"
    db.parent.mkdir(parents=True)
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE table_1_2 (col0 text, col1 real)")
    conn.executemany("INSERT INTO table_1_2 VALUES (?, ?)", [("a", 10.0), ("b", 20.0)])
    conn.commit()
    conn.close()
    write_predictions(tmp_path / "preds" / "wikisql.jsonl", {"dev-0": "select name from table where score > 19"})
    options_for = task_options("validation", tmp_path / "raw", None, None, progress=False)
    result = score_dir("validation", tmp_path / "preds", processed, options_for=options_for)
    metrics = result["results"]["wikisql"]["metrics"]
    assert metrics["lfem"] == 0.0 and metrics["exec_acc"] == 100.0


def test_mlflow_logging(workspace, capsys, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    tmp, processed, preds = workspace
    mlflow.set_tracking_uri(f"sqlite:///{tmp / 'mlflow.db'}")
    experiment = mlflow.create_experiment("score-test", artifact_location=str(tmp / "artifacts"))
    with mlflow.start_run(experiment_id=experiment) as run:
        pass
    monkeypatch.setenv("MLFLOW_RUN_ID", run.info.run_id)  # as a parent process would hand it over
    code, out, err = _run(capsys, "--split", "validation", "--predictions-dir", preds, "--data", processed,
                          "--mlflow")
    assert code == 0, err
    metrics = mlflow.tracking.MlflowClient().get_run(run.info.run_id).data.metrics
    assert metrics["validation/sst/em"] == 75.0
    assert metrics["validation/decascore"] == pytest.approx(json.loads(out)["decascore"])


def test_mlflow_without_a_run_is_an_error(workspace, capsys, monkeypatch):
    tmp, processed, preds = workspace
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    code, _, err = _run(capsys, "--task", "sst", "--split", "validation", "--predictions", preds / "sst.jsonl",
                        "--data", processed, "--mlflow")
    assert code == 1 and "no active MLflow run" in err


def test_log_scores_inside_an_active_run(tmp_path, monkeypatch):
    mlflow = pytest.importorskip("mlflow")
    from eval.score import log_scores

    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = mlflow.create_experiment("active", artifact_location=str(tmp_path / "artifacts"))
    scored = {"task": "sst", "split": "test", "n": 1, "metrics": {"em": 50.0},
              "headline": {"name": "em", "value": 50.0}}
    with mlflow.start_run(experiment_id=experiment) as run:
        assert log_scores(scored, step=3) == run.info.run_id
    history = mlflow.tracking.MlflowClient().get_metric_history(run.info.run_id, "test/sst/em")
    assert [(m.value, m.step) for m in history] == [(50.0, 3)]
    assert "test/decascore" not in mlflow.tracking.MlflowClient().get_run(run.info.run_id).data.metrics


def test_log_scores_names_metrics_in_the_one_namespace():
    from deca.metric_logging import MemoryLogger
    from eval.score import log_scores

    logger = MemoryLogger()
    result = {"task": "sst", "split": "validation", "n": 1, "metrics": {"em": 50.0, "note": "x"},
              "headline": {"name": "em", "value": 50.0}}
    log_scores({"split": "validation", "decascore": 50.0, "results": {"sst": result}}, logger, step=7)
    assert logger.metrics == {"validation/sst/em": [(7, 50.0)], "validation/sst/headline": [(7, 50.0)],
                              "validation/decascore": [(7, 50.0)]}
