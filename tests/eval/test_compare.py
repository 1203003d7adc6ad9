"""`deca compare` (eval/compare.py, eval/compare_cli.py): rows from MLflow, DVC experiments, metrics files, the paper."""
from __future__ import annotations

import json

import pytest

from deca.cli import main
from deca.errors import ConfigError, DataError
from deca.registry import DECANLP, get_task
from eval import compare
from eval.labels import TASK_LABELS


def test_paper_rows_are_table_3():
    rows = compare.paper_rows()
    assert [r.strategy for r in rows] == ["fully_joint", "curriculum", "anti_curriculum_squad",
                                         "anti_curriculum_squad_iwslt_cnn", "anti_curriculum_squad_iwslt_cnn_mnli"]
    for r in rows:
        assert list(r.scores) == list(DECANLP) and not r.partial
        assert sum(r.scores.values()) == pytest.approx(r.total, abs=0.15)  # the paper rounds each entry
    assert max(rows, key=lambda r: r.total).strategy == "anti_curriculum_squad"


def headline_key(task: str, split: str = "validation") -> str:
    return f"{split}/{task}/{get_task(task).metric}"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """A synthetic MLflow store: runs logged the way `deca train` and `deca evaluate` log them."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    path = tmp_path_factory.mktemp("mlflow")
    uri = f"sqlite:///{path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(path / "artifacts").as_uri())
    ids = {}

    def run(name, strategy, metrics, evaluated=None, **tags):
        r = client.create_run(exp, run_name=name, tags={"strategy": strategy, **tags})
        client.log_batch(r.info.run_id, params=[Param("train.strategy", strategy)],
                         metrics=[Metric(k, v, 1000, 7) for k, v in metrics.items()]
                         + [Metric(k, v - 50.0, 1000, 9) for k, v in metrics.items() if k.startswith("validation/")])
        if evaluated:  # deca evaluate scores the best model (iteration 7) later, with all examples
            client.log_batch(r.info.run_id, metrics=[Metric(k, v, 2000, 7) for k, v in evaluated.items()])
            client.set_tag(r.info.run_id, compare.EVALUATED_TAG.format(split="validation"), 7)
        client.set_terminated(r.info.run_id)
        ids[name] = r.info.run_id

    evaluated = {headline_key(t): 10.0 + i for i, t in enumerate(DECANLP)}
    evaluated.update({"validation/decascore": sum(evaluated.values()), headline_key("sst", "test"): 42.0})
    during_training = {headline_key(t): 99.0 for t in DECANLP}
    run("joint", "fully_joint", during_training, evaluated=evaluated)
    run("squad-first", "anti_curriculum_squad", {headline_key("squad"): 80.0, headline_key("sst"): 110.0,
                                                 "validation/decascore": 190.0, "train/loss": 3.0},
        **{"phase.0": "anti_curriculum_squad from iteration 0", "phase.1": "round_robin from iteration 3"})
    run("crashed", "fully_joint", {"train/loss": 9.0})
    return uri, ids


def test_rows_from_mlflow_prefer_evaluate_metrics(store):
    uri, _ = store
    rows = compare.rows_from_mlflow(uri, experiments=["decanlp"])
    assert [r.label for r in rows] == ["joint", "squad-first"]  # start order; the run without metrics is left out
    joint, squad = rows
    assert joint.scores["sst"] == 14.0  # deca evaluate's value wins over the later in-training validation
    assert joint.total == pytest.approx(sum(10.0 + i for i in range(10))) and not joint.partial
    assert joint.strategy == "fully_joint" and joint.meta["metrics"] == "evaluate"
    # without an evaluation: the latest validation round (iteration 9)
    assert squad.scores == {"squad": 30.0, "sst": 60.0} and squad.partial and squad.meta["metrics"] == "training"


def test_rows_from_mlflow_filters_and_run_ids(store):
    uri, ids = store
    rows = compare.rows_from_mlflow(uri, experiments=["decanlp"], filter_string="params.`train.strategy` = 'fully_joint'")
    assert [r.label for r in rows] == ["joint"]
    rows = compare.rows_from_mlflow(uri, run_ids=[ids["squad-first"]])
    assert [r.label for r in rows] == ["squad-first"]
    test_rows = compare.rows_from_mlflow(uri, experiments=["decanlp"], split="test")
    assert [(r.label, r.scores) for r in test_rows] == [("joint", {"sst": 42.0})]
    with pytest.raises(ConfigError, match="no MLflow experiment 'nope'.*decanlp"):
        compare.rows_from_mlflow(uri, experiments=["nope"])


def test_cli_writes_table_markdown_and_plot(store, tmp_path, capsys, monkeypatch):
    uri, _ = store
    monkeypatch.chdir(tmp_path)  # no params.yaml here: defaults apply
    out = tmp_path / "cmp" / "strategies"
    assert main(["compare", "--mlflow", "decanlp", "--tracking-uri", uri, "--paper", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "decaScore" in printed and "squad-first" in printed and "paper (Table 3)" in printed
    assert "* partial" in printed
    md = (tmp_path / "cmp" / "strategies.md").read_text()
    header = next(line for line in md.splitlines() if line.startswith("| run"))
    assert header.split("|")[3:-2] == [f" {TASK_LABELS[t]} " for t in DECANLP]
    assert "| joint | fully_joint | 10.0 | 11.0 |" in md and "| squad-first | anti_curriculum_squad | 30.0 | - |" in md
    data = json.loads((tmp_path / "cmp" / "strategies.json").read_text())
    assert [r["label"] for r in data["rows"]][:2] == ["joint", "squad-first"] and len(data["rows"]) == 7
    png = (tmp_path / "cmp" / "strategies.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000


def exp_show(metrics_path: str = "eval/metrics.json") -> list[dict]:
    """The structure of `dvc exp show --json` (DVC 3): workspace, then each commit with its experiments."""
    def data(strategy, scores, when="2026-01-01T00:00:00"):
        doc = {"decascore": sum(scores.values()), "tasks": {t: {"headline": v, "headline_metric": "em"}
                                                            for t, v in scores.items()}}
        return {"rev": "x", "timestamp": when,
                "params": {"params.yaml": {"data": {"train": {"strategy": strategy, "iterations": 6}}}},
                "metrics": {metrics_path: {"data": doc}}}

    return [
        {"rev": "workspace", "name": None, "data": data("fully_joint", {"sst": 1.0}), "error": None, "experiments": None},
        {"rev": "1ec5952a", "name": "main", "data": {**data("fully_joint", {"sst": 5.0}),
                                                     "metrics": {metrics_path: {"error": {"type": "FileNotFoundError"}}}},
         "error": None,
         "experiments": [
             {"revs": [{"rev": "34dfe14e", "name": "squad-first", "data": data("anti_curriculum_squad",
                                                                              {"squad": 20.0, "sst": 50.0},
                                                                              "2026-01-01T00:05:00"),
                        "error": None, "experiments": None}], "executor": None, "name": "squad-first"},
             {"revs": [{"rev": "92505134", "name": "joint", "data": data("fully_joint", {"squad": 10.0, "sst": 70.0}),
                        "error": None, "experiments": None}], "executor": None, "name": "joint"},
         ]},
    ]


def test_rows_from_dvc_experiments():
    rows = compare.rows_from_dvc(exp_show())  # oldest first (DVC lists the newest first)
    assert [(r.label, r.strategy, r.scores) for r in rows] == [
        ("joint", "fully_joint", {"squad": 10.0, "sst": 70.0}),
        ("squad-first", "anti_curriculum_squad", {"squad": 20.0, "sst": 50.0})]
    assert rows[1].meta["rev"] == "34dfe14e" and rows[1].meta["iterations"] == 6
    assert [r.label for r in compare.rows_from_dvc(exp_show(), names=["squad-first", "joint"])] == ["squad-first", "joint"]
    assert [r.label for r in compare.rows_from_dvc(exp_show(), names=["joint"])] == ["joint"]
    assert [r.label for r in compare.rows_from_dvc(exp_show(), names=["9250"])] == ["joint"]  # a revision prefix
    assert compare.rows_from_dvc(exp_show(), metrics_path="other.json") == []


def test_metrics_file_row(tmp_path):
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"split": "validation", "decascore": 70.0, "iteration": 5,
                                   "tasks": {"sst": {"headline": 50.0}, "schema": {"headline": 20.0}}}))
    params = tmp_path / "params.yaml"
    params.write_text("train:\n  strategy: curriculum\n")
    row = compare.row_from_metrics_file(metrics, params_path=params)
    assert (row.label, row.strategy, row.total, row.partial) == ("this run", "curriculum", 70.0, True)
    with pytest.raises(DataError, match="metrics file not found"):
        compare.row_from_metrics_file(tmp_path / "missing.json")
    metrics.write_text('{"tasks": {\n  "sst": oops}\n')
    with pytest.raises(DataError, match=r"metrics.json:2: not valid JSON"):
        compare.row_from_metrics_file(metrics)
    metrics.write_text('{"tasks": {}}')
    with pytest.raises(DataError, match="no per-task headline"):
        compare.row_from_metrics_file(metrics)


def test_text_table_marks_missing_and_partial():
    rows = [compare.Row("a", "file", {"sst": 12.345}, strategy="fully_joint")]
    text = compare.text_table(rows, ["squad", "sst"])
    header, _, line, note = text.splitlines()
    assert header.split() == ["run", "strategy", "SQuAD", "SST", "decaScore"]
    assert line.split() == ["a", "fully_joint", "-", "12.3", "12.3*"] and note.startswith("* partial")


def test_a_curriculum_run_that_never_left_its_first_phase_is_labelled(tmp_path):
    from mlflow import MlflowClient
    from mlflow.entities import Metric, Param

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(tmp_path / "artifacts").as_uri())
    r = client.create_run(exp, run_name="short", tags={"phase.0": "anti_curriculum_squad from iteration 0"})
    client.log_batch(r.info.run_id, params=[Param("train.strategy", "anti_curriculum_squad")],
                     metrics=[Metric("validation/squad/nf1", 5.0, 0, 7)])
    (row,) = compare.rows_from_mlflow(uri, experiments=["decanlp"])
    assert row.strategy == "anti_curriculum_squad (first phase only)"


def test_mlflow_rows_show_custom_tasks_and_tell_runs_of_one_name_apart(tmp_path, capsys, monkeypatch):
    """Every run of the DVC pipeline is named `pipeline`; a custom task's column shows as with --dvc."""
    import yaml
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from deca.config import Params
    from deca.custom_tasks import declare

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(tmp_path / "artifacts").as_uri())
    ids, starts = [], [1767261600000, 1767348000000]
    for start, (sst, minqa) in zip(starts, [(80.0, 41.0), (82.0, 47.5)]):
        run_id = client.create_run(exp, run_name="pipeline", start_time=start).info.run_id
        client.log_batch(run_id, metrics=[Metric(k, v, 1000, 9) for k, v in {
            headline_key("sst"): sst, "validation/sst/headline": sst, "validation/minqa/nf1": minqa,
            "validation/minqa/em": 1.0, "validation/minqa/headline": minqa, "validation/decascore": sst}.items()])
        ids.append(run_id)
    spec = {"metric": "nf1", "files": {"validation": "dev.jsonl"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"custom_tasks": {"minqa": spec}}))
    monkeypatch.chdir(tmp_path)
    try:
        assert main(["compare", "--mlflow", "decanlp", "--tracking-uri", uri, "--json"]) == 0
    finally:
        declare(Params())
    data = json.loads(capsys.readouterr().out)
    assert data["tasks"] == ["sst", "minqa"]
    assert [(r["label"], r["scores"]) for r in data["rows"]] == [
        (f"pipeline ({compare._local_time(starts[0])}, {ids[0][:8]})", {"sst": 80.0, "minqa": 41.0}),
        (f"pipeline ({compare._local_time(starts[1])}, {ids[1][:8]})", {"sst": 82.0, "minqa": 47.5})]
    # a custom task that the current params do not declare is read from its headline
    rows = compare.rows_from_mlflow(uri, experiments=["decanlp"])
    assert [r.scores["minqa"] for r in rows] == [41.0, 47.5]
