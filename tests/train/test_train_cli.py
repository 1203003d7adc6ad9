import dataclasses
import json
import os
import shutil
import time

import pyarrow.parquet as pq
import pytest

from deca.cli import build_parser
from deca.checks import load_params
from deca.config import Params
from deca.errors import ConfigError, DataError
from deca.params_args import parse_overrides
from deca.runs import RUN_FILE, latest_run
from train.driver import check_inputs, check_training, fit, resolve_paths


def test_parse_overrides_yaml_values():
    assert parse_overrides(["train.iterations=50", "train.tasks=[sst, woz.en]", "train.max_val_examples=null",
                            "train.use_gpu=true"]) == {
        "train.iterations": 50, "train.tasks": ["sst", "woz.en"], "train.max_val_examples": None,
        "train.use_gpu": True}
    params = load_params("/nonexistent.yaml", overrides=parse_overrides(["train.token_budget=500"]))
    assert params.train.token_budget == 500
    for bad in ("iterations=5", "train.iterations", "train.tasks=[sst"):
        with pytest.raises(ConfigError, match="--set"):
            parse_overrides([bad])


def test_help_lists_the_options():
    parser = build_parser("train")
    sub = parser._subparsers._group_actions[0].choices["train"]
    text = sub.format_help()
    for option in ("--params", "--set KEY=VALUE", "--run-name", "--resume", "--no-progress", "RAY_ADDRESS"):
        assert option in text


def test_paths_are_made_absolute(tmp_path):
    p = resolve_paths(Params(), tmp_path)
    assert p.data.processed_dir == str(tmp_path / "data" / "processed")
    assert p.train.storage_dir == str(tmp_path / "checkpoints")
    assert resolve_paths(p, tmp_path / "elsewhere").data.vocab_path == str(tmp_path / "data" / "vocab.txt")


def test_inputs_are_checked_before_ray_starts(mini_data, tmp_path):
    processed, vocab, _ = mini_data
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    check_inputs(params, ["sst"])
    with pytest.raises(DataError, match="no processed train split for task 'nonexistent-task'"):
        check_inputs(params, ["nonexistent-task"])
    missing = dataclasses.replace(params, data=dataclasses.replace(params.data, vocab_path=str(tmp_path / "v.txt")))
    with pytest.raises(DataError, match="vocabulary not found"):
        check_inputs(missing, ["sst"])
    zero = dataclasses.replace(params, train=dataclasses.replace(params.train, iterations=0))
    with pytest.raises(ConfigError, match="train.iterations = 0: must be >= 1"):
        check_training(zero)  # the params: once, in check_training (check_inputs looks at the files)
    empty = tmp_path / "processed"
    shutil.copytree(processed / "sst", empty / "sst")
    for shard in (empty / "sst" / "train").glob("*.parquet"):  # a prepared split that kept no example
        pq.write_table(pq.read_table(shard).slice(0, 0), shard)
    no_rows = dataclasses.replace(params, data=dataclasses.replace(params.data, processed_dir=str(empty)))
    with pytest.raises(DataError, match="the training split of task 'sst' has no examples"):
        check_inputs(no_rows, ["sst"])
    for split in ("train", "validation"):  # a truncated shard: named, with the fix, before Ray starts
        broken = tmp_path / f"broken-{split}"
        shutil.copytree(processed / "sst", broken / "sst")
        shard = sorted((broken / "sst" / split).glob("*.parquet"))[0]
        shard.write_bytes(shard.read_bytes()[:-20])
        bad = dataclasses.replace(params, data=dataclasses.replace(params.data, processed_dir=str(broken)))
        with pytest.raises(DataError, match="not a readable Parquet shard, truncated or corrupt") as err:
            check_inputs(bad, ["sst"])
        assert str(err.value).startswith(f"{shard}: ")
        assert str(err.value).endswith("fix: rerun `deca prepare --tasks sst` (or `dvc repro prepare@sst`)")
    no_vectors = dataclasses.replace(params, model=dataclasses.replace(params.model,
                                                                       word_vectors=str(tmp_path / "glove.txt")))
    with pytest.raises(DataError, match="word-vector source not found"):  # on the driver, before Ray starts
        check_inputs(no_vectors, ["sst"])


def test_run_names_and_resume_errors(mini_data, tmp_path):
    processed, vocab, _ = mini_data
    storage = tmp_path / "checkpoints"
    with pytest.raises(ConfigError, match="no training run under"):
        latest_run(storage)
    for name in ("old", "new"):
        (storage / name).mkdir(parents=True)
        (storage / name / RUN_FILE).write_text(json.dumps({"mlflow_run_id": "x", "tracking_uri": "y"}))
        time.sleep(0.01)
    os.utime(storage / "old" / RUN_FILE, (time.time() - 100, time.time() - 100))
    assert latest_run(storage) == storage / "new"

    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    params.train = dataclasses.replace(params.train, tasks=["sst"], storage_dir=str(storage))
    with pytest.raises(ConfigError, match="'new' already exists.*--resume"):
        fit(params, run_name="new", project=tmp_path)
    with pytest.raises(ConfigError, match="not found"):
        fit(params, run_name="missing", resume=True, project=tmp_path)
    with pytest.raises(ConfigError, match="unknown strategy"):
        fit(dataclasses.replace(params, train=dataclasses.replace(params.train, strategy="joint")),
            run_name="x", project=tmp_path)


def test_a_training_that_fails_before_its_first_checkpoint_leaves_no_run_and_a_failed_mlflow_run(
        mini_data, tmp_path, monkeypatch):
    from mlflow import MlflowClient

    from train import driver

    processed, vocab, _ = mini_data
    params = Params()
    params.data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    params.train = dataclasses.replace(params.train, tasks=["sst"], storage_dir=str(tmp_path / "checkpoints"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setattr(driver, "start_ray", lambda params: False)
    def too_many(params):
        raise ConfigError("train.num_workers=64 needs 64 CPU but Ray has 2")

    monkeypatch.setattr(driver, "check_resources", too_many)
    with pytest.raises(ConfigError, match="num_workers=64"):
        fit(params, run_name="first", project=tmp_path)
    assert not (tmp_path / "checkpoints" / "first").exists()
    full = OSError(28, "No space left on device", str(tmp_path / "checkpoints" / "second" / "state.pt"))
    def disk_full(params):
        raise RuntimeError("Training failed due to worker errors") from full

    monkeypatch.setattr(driver, "check_resources", disk_full)
    with pytest.raises(driver.TrainingFailed) as err:
        fit(params, run_name="second", project=tmp_path)
    assert str(err.value).splitlines()[0] == (f"training run 'second' failed: no space left on the device of "
                                              f"{full.filename}")
    assert "the run folder" in str(err.value) and not (tmp_path / "checkpoints" / "second").exists()
    runs = MlflowClient(uri).search_runs([e.experiment_id for e in MlflowClient(uri).search_experiments()])
    assert sorted(r.info.status for r in runs) == ["FAILED", "FAILED"]


def test_the_worker_error_inside_ray_trains_error_is_what_is_said(tmp_path):
    from train.driver import training_failed, worker_cause

    class WorkerGroupError(RuntimeError):
        def __init__(self, failures):
            super().__init__("Training failed due to worker errors:\n[Rank 0]\nTraceback (most recent call last): ...")
            self.worker_failures = failures

    shard = DataError(tmp_path / "part-0.parquet", "not a readable Parquet shard", fix="rerun `deca prepare`")
    assert worker_cause(WorkerGroupError({0: shard})) is shard
    text = str(training_failed(WorkerGroupError({0: shard}), "r", tmp_path, kept=True))
    assert text.splitlines() == [f"training run 'r' failed: {tmp_path / 'part-0.parquet'}: not a readable Parquet "
                                 "shard", "  fix: rerun `deca prepare`",
                                 f"  checkpoints: {tmp_path}; continue with `deca train --resume r`"]
    other = str(training_failed(WorkerGroupError({0: ZeroDivisionError("x")}), "r", tmp_path, kept=True))
    assert other.startswith("training run 'r' failed: WorkerGroupError: Training failed due to worker errors:")
    assert "Traceback" not in other


def test_deca_train_checks_params_builds_the_schedule_and_declares_custom_tasks_once(mini_data, tmp_path,
                                                                                      monkeypatch):
    """Up to starting Ray, `deca train` checks params once, builds the schedule once and declares the custom
    tasks once in its process (it was 3, 3 and 2: the load, the command's check and fit's check each did)."""
    import collections

    import deca.checks
    from train import driver

    processed, vocab, _ = mini_data
    calls = collections.Counter()

    def counted(module, name):
        real = getattr(module, name)

        def wrapper(*args, **kwargs):
            calls[name] += 1
            return real(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    counted(deca.checks, "check_params")
    counted(deca.checks, "declare")
    counted(driver, "check_params")
    counted(driver, "from_config")

    class RayStarts(Exception):
        pass

    def start_ray(params):
        raise RayStarts
    monkeypatch.setattr(driver, "start_ray", start_ray)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{tmp_path / 'mlflow.db'}")
    monkeypatch.chdir(tmp_path)
    sets = [f"data.processed_dir={processed}", f"data.vocab_path={vocab}", "train.tasks=[sst]",
            "model.word_vectors=null", f"train.storage_dir={tmp_path / 'runs'}"]
    args = build_parser("train").parse_args(["train", *[a for s in sets for a in ("--set", s)], "--run-name", "x",
                                             "--no-progress"])
    with pytest.raises(driver.TrainingFailed, match="RayStarts"):
        args._run(args)
    assert calls == {"check_params": 1, "declare": 1, "from_config": 1}


def test_a_full_disk_before_any_checkpoint_removes_the_run_folder_and_says_where(tmp_path):
    """Ray's copy of the first checkpoint cut off by a full disk leaves a folder Ray never registered: nothing
    to resume, so the run folder goes; a registered checkpoint keeps it."""
    from ray.train.v2.api.exceptions import WorkerGroupError

    from deca.errors import WriteError
    from train.driver import discard_unstarted, training_failed

    run = tmp_path / "checkpoints" / "r"
    (run / "checkpoint_00000002").mkdir(parents=True)
    (run / "checkpoint_00000002" / "state.pt").write_bytes(b"cut off")
    (run / RUN_FILE).write_text("{}")
    assert discard_unstarted(run) and not run.exists()
    model = run / "best" / "model.pt"
    text = str(training_failed(WorkerGroupError("[Rank 0] ...", {0: WriteError(28, "No space left on device", model)}),
                               "r", run, kept=False))
    assert text.splitlines() == [f"training run 'r' failed: no space left on the device of {model}",
                                 "  fix: free space there or set train.storage_dir to a disk with room, then train "
                                 "again", f"  no checkpoint was written: the run folder {run} was removed"]
    (run / "checkpoint_00000002").mkdir(parents=True)
    (run / "checkpoint_manager_snapshot.json").write_text(
        json.dumps({"checkpoint_results": [{"checkpoint_dir_name": "checkpoint_00000002"}]}))
    assert not discard_unstarted(run) and run.is_dir()


def test_a_full_disk_under_ray_trains_own_writes_is_named_too(tmp_path):
    """Ray Train's controller writes its checkpoint snapshot into the run folder on the driver (a ControllerError)."""
    from ray.train.v2.api.exceptions import ControllerError

    from train.driver import training_failed

    run = tmp_path / "checkpoints" / "r"
    snapshot = run / "checkpoint_manager_snapshot.json"
    text = str(training_failed(ControllerError(OSError(28, "No space left on device", str(snapshot))), "r", run,
                               kept=True))
    assert text.splitlines() == [f"training run 'r' failed: no space left on the device of {snapshot}",
                                 "  fix: free space there or set train.storage_dir to a disk with room, then resume",
                                 f"  checkpoints: {run}; continue with `deca train --resume r`"]
