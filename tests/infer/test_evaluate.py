"""`deca evaluate` (infer/evaluate.py, infer/evaluate_cli.py) with a tiny real model on the miniature processed data."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

from deca.checks import load_params
from deca.config import ModelConfig, Params
from deca.errors import ConfigError, DataError
from deca.schema import read_split
from infer.evaluate import evaluate
from deca.runs import latest_run
from mqan.checkpoint import save_checkpoint
from mqan.greedy import GreedyOutput
from mqan.model import MQAN, build_model
from mqan.vocab import Vocab

from tests.mini_data import write_rows

TASKS = ["sst", "schema"]


@pytest.fixture(scope="module")
def setup(mini_data, tmp_path_factory):
    """A processed dir (with an sst test split too), its vocabulary and a run directory with a tiny model."""
    torch.set_num_threads(1)
    processed, vocab_path, tasks = mini_data
    if not set(TASKS) <= set(tasks):
        pytest.skip(f"fixtures for {TASKS} are needed")
    root = tmp_path_factory.mktemp("evaluate")
    test_rows = [dict(r, split="test", id=f"t-{r['id']}") for r in read_split(processed, "sst", "validation").to_pylist()]
    write_rows(processed, "sst", "test", test_rows)
    cfg = ModelConfig(dimension=16, ff_hidden=16, heads=2, embedding_dim=16, max_generative_vocab=60,
                      max_answer_length=4, dropout=0.0)
    vocab = Vocab.load(vocab_path, cfg.max_generative_vocab)
    torch.manual_seed(0)
    run_dir = root / "checkpoints" / "run1"
    save_checkpoint(run_dir / "best" / "model.pt", build_model(cfg, vocab), {"iteration": 7})
    (run_dir / "deca_run.json").write_text(json.dumps(UNTRACKED))
    return root, processed, vocab_path, run_dir


UNTRACKED = {"mlflow_run_id": None, "tracking_uri": None}  # a run record without an MLflow run


def params_for(setup, **evaluate) -> Params:
    root, processed, vocab_path, _ = setup
    p = load_params(Path("/nonexistent/params.yaml"))  # the defaults
    data = dataclasses.replace(p.data, processed_dir=str(processed), vocab_path=str(vocab_path), raw_dir=str(root / "raw"))
    out = root / "out"
    ev = dataclasses.replace(p.evaluate, tasks=TASKS, batch_size=3, predictions_dir=str(out / "predictions"),
                             metrics_path=str(out / "metrics.json"), report_dir=str(out / "report"),
                             plots_dir=str(out / "plots"), device="cpu", **evaluate)
    train = dataclasses.replace(p.train, storage_dir=str(root / "checkpoints"))
    return dataclasses.replace(p, data=data, evaluate=ev, train=train)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_writes_predictions_metrics_report_and_plots(setup):
    params = params_for(setup)
    scored = evaluate(params, progress=False)  # the latest run under train.storage_dir
    ev = params.evaluate
    for task in TASKS:
        gold = read_split(params.data.processed_dir, task, "validation").to_pylist()
        preds = read_jsonl(Path(ev.predictions_dir) / f"{task}.jsonl")
        assert [p["id"] for p in preds] == [g["id"] for g in gold]  # split order, every example once
        assert all(isinstance(p["prediction"], str) and p["prediction"] == p["prediction"].lower() for p in preds)
        # context, question and gold side by side with the prediction
        assert [(p["context"], p["question"], p["answer"]) for p in preds] == \
            [(g["context"], g["question"], g["answer"]) for g in gold]
        assert all(isinstance(p["stats"], list) and p["stats"] for p in preds)  # for `deca compare --runs-a/-b`
    metrics = json.loads(Path(ev.metrics_path).read_text())
    for task, entry in metrics["tasks"].items():  # 95% bootstrap intervals (eval/stats.py)
        low, high = entry["interval"]
        assert low <= entry["headline"] + 1e-9 and entry["headline"] <= high + 1e-9, task
    low, high = metrics["decascore_interval"]
    assert low <= metrics["decascore"] + 1e-9 <= high + 2e-9
    assert metrics["split"] == "validation" and metrics["iteration"] == 7 and metrics["partial"] is True
    assert set(metrics["tasks"]) == set(TASKS)
    assert metrics["decascore"] == pytest.approx(sum(t["headline"] for t in metrics["tasks"].values()))
    assert metrics["decascore"] == pytest.approx(scored["decascore"])
    report = (Path(ev.report_dir) / "report.md").read_text()
    assert report.startswith("# Evaluation") and "run1/best/model.pt" in report and "decaScore" in report
    examples = report.split("# Examples")[1]
    shown = sum(min(3, t["n"]) for t in metrics["tasks"].values())  # up to three per task
    assert "## sst" in examples and examples.count("- **question:**") == shown
    assert (Path(ev.plots_dir) / "per_task.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = (Path(ev.plots_dir) / "per_task.csv").read_text().splitlines()
    assert csv[0] == "task,metric,score" and {line.split(",")[0] for line in csv[1:]} == set(TASKS)
    for png in ("loss.png", "validation.png"):  # no MLflow run here: a placeholder says so
        assert (Path(ev.plots_dir) / png).read_bytes()[:4] == b"\x89PNG"
    assert (Path(ev.report_dir) / "headline.png").exists()


def test_clean_scores_leave_out_the_examples_the_contamination_output_flags(setup):
    """`deca contamination`'s folder (deca/contamination.py): each task's score and the decaScore also on the
    examples it does not flag, in metrics.json's ``clean``."""
    from deca.contamination import IDS_FILE

    params = params_for(setup)
    gold = read_split(params.data.processed_dir, "sst", "validation").to_pylist()
    folder = setup[0] / "contamination"
    folder.mkdir(exist_ok=True)
    flagged = [str(gold[0]["id"])]
    (folder / IDS_FILE).write_text(json.dumps({"format": 1, "n": 13, "splits": {
        "sst/validation": {"any": flagged, "by_field": {}, "by_train_task": {}}}}))
    scored = evaluate(params, progress=False, contamination=str(folder))
    clean = json.loads(Path(params.evaluate.metrics_path).read_text())["clean"]
    assert clean["tasks"]["sst"]["n"] == len(gold) - 1 and clean["tasks"]["sst"]["excluded"] == 1
    assert clean["not_checked"] == ["schema"] and clean["decascore"] == pytest.approx(scored["clean"]["decascore"])
    report = (Path(params.evaluate.report_dir) / "report.md").read_text()
    assert "## Without the examples that overlap training data" in report
    assert f"| sst | {clean['tasks']['sst']['headline']:.2f} | {len(gold) - 1} | 1 |" in report
    assert "Not checked (no contamination output for them): schema." in report
    assert "clean" not in evaluate(params, progress=False, contamination=None)


def test_a_broken_contamination_output_stops_the_evaluation_before_decoding(setup, tmp_path, monkeypatch):
    from deca.contamination import IDS_FILE
    from deca.errors import DataError

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the contamination output was read")

    monkeypatch.setattr("infer.evaluate.load_model", never)
    (tmp_path / IDS_FILE).write_text("{}", encoding="utf-8")
    with pytest.raises(DataError, match=IDS_FILE):
        evaluate(params_for(setup), progress=False, contamination=str(tmp_path))


def test_figure3_from_the_decoded_answers(setup):
    """Which source answers (the paper's Figure 3), from the switch weights of the real greedy decoding:
    the shares of a task sum to 100%, and they are what the weights of `deca predict` give."""
    from eval.sources import SOURCES, summarize
    from mqan.checkpoint import load_model
    from infer.evaluate import log_to_run, read_rows
    from mqan.decode import decode
    from deca.metric_logging import MemoryLogger

    params = params_for(setup)
    scored = evaluate(params, progress=False)
    ev = params.evaluate
    metrics = json.loads(Path(ev.metrics_path).read_text())
    model, vocab, _ = load_model(setup[3] / "best" / "model.pt", params.data.vocab_path, torch.device("cpu"))
    for task in TASKS:
        source = metrics["tasks"][task]["source"]
        assert source["tokens"] > 0  # the untrained model writes answer tokens (up to max_answer_length = 4)
        assert sum(source[f"{s}_share"] for s in SOURCES) == pytest.approx(100.0)
        assert sum(source[f"{s}_mean_weight"] for s in SOURCES) == pytest.approx(1.0, abs=1e-5)
        rows = read_rows(params.data.processed_dir, task, "validation", None)
        explained = decode(model, vocab, rows, 3, None, torch.device("cpu"), explain=True)
        light = decode(model, vocab, rows, 3, None, torch.device("cpu"), weights=True)
        assert [(a.text, a.tokens, a.weights) for a in light] == [(a.text, a.tokens, a.weights) for a in explained]
        assert all(len(a.weights) == len(a.tokens) for a in light) and not any(a.shares for a in light)
        expected = summarize([a.weights for a in explained])
        assert scored["results"][task]["sources"] == expected
        assert source["tokens"] == sum(len(a.tokens) for a in explained)
    report = (Path(ev.report_dir) / "report.md").read_text()
    assert "## Which source answers (Figure 3)" in report
    for path in (Path(ev.report_dir) / "figure3.png", Path(ev.plots_dir) / "figure3.png"):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    csv = (Path(ev.plots_dir) / "figure3.csv").read_text().splitlines()
    assert csv[0].startswith("task,tokens,vocabulary_share") and {line.split(",")[0] for line in csv[1:]} == set(TASKS)
    logger = MemoryLogger()
    log_to_run(logger, scored, [], 7)
    for task in TASKS:
        shares = [logger.metrics[f"validation/{task}/source/{s}_share"] for s in SOURCES]
        assert all(values[0][0] == 7 for values in shares)
        assert sum(values[0][1] for values in shares) == pytest.approx(100.0)
    assert logger.metrics["validation/decascore"] == [(7, pytest.approx(scored["decascore"]))]


def test_oracle_predictions_score_100(setup, monkeypatch):
    """The decoded text of each example reaches the scorer under its own id (batches are length-sorted)."""
    params = params_for(setup)
    answers = {}
    for task in TASKS:
        answers.update({r["id"]: r["answer"] for r in read_split(params.data.processed_dir, task, "validation").to_pylist()})

    def oracle(self, batch, max_len=None, explain=False, cuda_graphs=False):
        n = len(batch.ids)  # texts only: no decoding steps, so no answer tokens for Figure 3
        return GreedyOutput([[] for _ in range(n)], [answers[i] for i in batch.ids], torch.zeros(n, 1, dtype=torch.long),
                            torch.zeros(n, 1), torch.zeros(n, 1, 3), torch.zeros(n, dtype=torch.long))

    monkeypatch.setattr(MQAN, "greedy", oracle)
    scored = evaluate(params, progress=False)
    assert {t: r["headline"]["value"] for t, r in scored["results"].items()} == {t: 100.0 for t in TASKS}
    assert scored["decascore"] == 200.0
    assert all(r["sources"]["tokens"] == 0 and not r["sources"]["share"] for r in scored["results"].values())


def test_test_split_skips_tasks_without_one(setup):
    params = params_for(setup, split="test")
    params = dataclasses.replace(params, evaluate=dataclasses.replace(params.evaluate, tasks=["sst", "squad"]))
    scored = evaluate(params, run=str(setup[3]), progress=False)
    assert list(scored["results"]) == ["sst"] and scored["skipped"] == {"squad": "no test split"}
    preds = read_jsonl(Path(params.evaluate.predictions_dir) / "sst.jsonl")
    assert preds and all(p["id"].startswith("t-") for p in preds)
    metrics = json.loads(Path(params.evaluate.metrics_path).read_text())
    assert metrics["split"] == "test" and metrics["skipped"] == {"squad": "no test split"}


def test_max_examples_and_predictions_replaced_as_a_whole(setup):
    params = params_for(setup, max_examples=2)
    stale = Path(params.evaluate.predictions_dir) / "woz.en.jsonl"
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_text('{"id": "x", "prediction": "old"}\n')
    scored = evaluate(params, progress=False)
    assert all(r["n"] == 2 for r in scored["results"].values())
    assert sorted(p.name for p in stale.parent.iterdir()) == ["model.json", "schema.jsonl", "sst.jsonl"]
    assert json.loads(Path(params.evaluate.metrics_path).read_text())["max_examples"] == 2


def test_a_missing_split_fails_naming_it_and_leaves_results_alone(setup):
    params = params_for(setup)
    evaluate(params, progress=False)
    before = {p.name: p.read_bytes() for p in Path(params.evaluate.predictions_dir).iterdir()}
    metrics_before = Path(params.evaluate.metrics_path).read_bytes()
    # mrqa.drop is an evaluation-only task: the miniature processed data has no split of it
    bad = dataclasses.replace(params, evaluate=dataclasses.replace(params.evaluate, tasks=["sst", "mrqa.drop"]))
    assert not (Path(params.data.processed_dir) / "mrqa.drop").exists()
    with pytest.raises(DataError, match=r"mrqa.drop/validation: no processed Parquet shards[\s\S]*deca prepare --tasks mrqa.drop"):
        evaluate(bad, progress=False)
    assert {p.name: p.read_bytes() for p in Path(params.evaluate.predictions_dir).iterdir()} == before
    assert Path(params.evaluate.metrics_path).read_bytes() == metrics_before


def test_logs_into_the_training_runs_mlflow_run(setup, tmp_path):
    from mlflow import MlflowClient

    root, _, _, run_dir = setup
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(tmp_path / "artifacts").as_uri())
    run_id = client.create_run(exp, run_name="run1").info.run_id
    (run_dir / "deca_run.json").write_text(json.dumps({"mlflow_run_id": run_id, "tracking_uri": uri}))
    try:
        scored = evaluate(params_for(setup), run=str(run_dir), progress=False)
    finally:
        (run_dir / "deca_run.json").write_text(json.dumps(UNTRACKED))
    logged = client.get_run(run_id).data.metrics
    assert logged["validation/decascore"] == pytest.approx(scored["decascore"])
    assert logged["validation/sst/em"] == pytest.approx(scored["results"]["sst"]["metrics"]["em"])
    assert logged["validation/sst/source/question_share"] == pytest.approx(
        scored["results"]["sst"]["sources"]["share"]["question"])
    history = client.get_metric_history(run_id, "validation/decascore")
    assert [m.step for m in history] == [7]
    assert client.get_run(run_id).data.tags["evaluated.validation"] == "7"  # deca compare prefers these
    artifacts = {a.path for a in client.list_artifacts(run_id, "evaluation/validation")}
    assert {"evaluation/validation/metrics.json", "evaluation/validation/report.md",
            "evaluation/validation/figure3.png"} <= artifacts


def test_cli_and_bad_settings(setup, tmp_path, capsys):
    import yaml

    from deca.cli import main

    params = params_for(setup)
    doc = {"data": dataclasses.asdict(params.data), "evaluate": dataclasses.asdict(params.evaluate),
           "train": {"storage_dir": params.train.storage_dir}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["evaluate", "--params", str(path), "--checkpoint", str(setup[3] / "best" / "model.pt"),
                 "--tasks", "sst", "--no-progress", "--max-answer-length", "2"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("sst ") and "decaScore" in out
    assert main(["evaluate", "--params", str(path), "--split", "train", "--no-progress"]) == 1
    assert "evaluate.split must be validation or test" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="no training run under"):
        latest_run(tmp_path / "empty")
    assert main(["evaluate", "--params", str(path), "--run", str(tmp_path), "--no-progress"]) == 1
    assert "the run has no best model" in capsys.readouterr().err


def test_another_split_never_overwrites_the_pipelines_results(setup, tmp_path, monkeypatch, capsys):
    import yaml

    from deca.cli import main

    params = params_for(setup)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"data": dataclasses.asdict(params.data),
                                    "evaluate": dataclasses.asdict(params.evaluate),
                                    "train": {"storage_dir": params.train.storage_dir}}))
    pipeline_metrics = Path(params.evaluate.metrics_path)
    before = pipeline_metrics.read_bytes() if pipeline_metrics.exists() else None
    monkeypatch.chdir(tmp_path)
    ckpt = str(setup[3] / "best" / "model.pt")
    assert main(["evaluate", "--params", str(path), "--checkpoint", ckpt, "--split", "test", "--tasks", "sst",
                 "--no-progress", "--no-mlflow", "--max-answer-length", "2"]) == 0
    assert "writing under eval/test/" in capsys.readouterr().out
    assert json.loads((tmp_path / "eval" / "test" / "metrics.json").read_text())["split"] == "test"
    assert (tmp_path / "eval" / "test" / "predictions" / "sst.jsonl").exists()
    assert (pipeline_metrics.read_bytes() if pipeline_metrics.exists() else None) == before
    assert main(["evaluate", "--params", str(path), "--checkpoint", ckpt, "--tasks", "sst", "--out", "elsewhere",
                 "--no-progress", "--no-mlflow", "--max-answer-length", "2"]) == 0
    assert (tmp_path / "elsewhere" / "metrics.json").exists()


def test_output_folders_that_cannot_be_written_fail_before_decoding(setup, tmp_path, monkeypatch):
    from deca.errors import WriteError

    def never(*args, **kwargs):
        raise AssertionError("the model was loaded before the output folders were checked")

    monkeypatch.setattr("infer.evaluate.load_model", never)
    (tmp_path / "blocker").write_text("a file where a folder should be")
    params = params_for(setup)
    bad = dataclasses.replace(params, evaluate=dataclasses.replace(
        params.evaluate, predictions_dir=str(tmp_path / "new" / "predictions"),
        report_dir=str(tmp_path / "blocker" / "report")))
    with pytest.raises(WriteError, match=f"^{tmp_path / 'blocker' / 'report'}: cannot be created"):
        evaluate(bad, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blocker"]  # nothing created on the way


def test_a_full_disk_names_the_output_and_leaves_no_empty_folder(setup, tmp_path, monkeypatch, capsys):
    import errno
    import io

    import yaml

    from deca.cli import main

    class FullDisk(io.StringIO):
        def write(self, text):
            raise OSError(errno.ENOSPC, "No space left on device")

    params = params_for(setup)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump({"data": dataclasses.asdict(params.data),
                                    "evaluate": dataclasses.asdict(params.evaluate),
                                    "train": {"storage_dir": params.train.storage_dir}}))
    monkeypatch.setattr("infer.evaluate.open", lambda *a, **k: FullDisk(), raising=False)
    out = tmp_path / "eval" / "test"
    assert main(["evaluate", "--params", str(path), "--checkpoint", str(setup[3] / "best" / "model.pt"),
                 "--tasks", "sst", "--out", str(out), "--no-progress", "--no-mlflow", "--max-answer-length", "2"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines()[-2:] == [f"error: {out / 'predictions'}: No space left on device",
                                     f"  fix: free space on the disk that holds {out} (or write the output "
                                     "elsewhere), then run it again"], err
    assert not (tmp_path / "eval").exists()  # neither eval/test nor eval is left behind empty


def test_a_custom_task_example_over_the_input_limit_is_named_with_its_file():
    from deca.config import CustomTaskConfig, Params
    from deca.errors import DataError
    from infer.evaluate import check_custom_rows

    params = Params()
    params.custom_tasks = {"myqa": CustomTaskConfig(files={"validation": "data/my/val.jsonl"})}
    rows = [{"id": "a", "context": "fine", "question": "q?"}, {"id": "b", "context": "x" * 20_001, "question": "q?"}]
    with pytest.raises(DataError, match=r"data/my/val.jsonl: example 'b' of custom task 'myqa': context: at most "
                                        r"20,000 characters, got 20,001"):
        check_custom_rows(params, "myqa", rows)
    check_custom_rows(params, "myqa", rows[:1])


def test_a_full_disk_after_the_predictions_leaves_the_previous_results_whole(setup, tmp_path, monkeypatch):
    import errno

    from deca.errors import WriteError
    from deca.io import atomic_write

    def full_disk(tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    params = params_for(setup)
    params = dataclasses.replace(params, evaluate=dataclasses.replace(
        params.evaluate, **{k: v.replace(str(setup[0] / "out"), str(tmp_path / "out"))
                            for k, v in dataclasses.asdict(params.evaluate).items() if k.endswith(("_dir", "_path"))}))
    evaluate(params, progress=False)
    before = {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()}
    monkeypatch.setattr("infer.evaluate.figure3_chart", lambda scored, path: atomic_write(path, full_disk))
    with pytest.raises(WriteError, match=f"^{tmp_path / 'out' / 'report' / 'figure3.png'}: No space left on device"
                                         f"\n  fix: free space"):
        evaluate(dataclasses.replace(params, evaluate=dataclasses.replace(params.evaluate, max_examples=2)),
                 progress=False)
    assert {p: p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()} == before
    assert [p.name for p in (tmp_path / "out").rglob(".*")] == []  # no temporary left


def test_a_full_disk_leaves_no_new_output_folder(setup, tmp_path, monkeypatch):
    import errno

    from deca.errors import WriteError

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    params = params_for(setup)
    out = tmp_path / "new" / "out"
    params = dataclasses.replace(params, evaluate=dataclasses.replace(
        params.evaluate, predictions_dir=str(out / "predictions"), metrics_path=str(out / "metrics.json"),
        report_dir=str(out / "report"), plots_dir=str(out / "plots")))
    monkeypatch.setattr("deca.io._fsync", full_disk)  # every file written, then the disk is full
    with pytest.raises(WriteError, match="No space left on device"):
        evaluate(params, progress=False)
    assert list(tmp_path.iterdir()) == []
