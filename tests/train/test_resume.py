"""--resume continues a run with the settings it was started with; a change is explicit (--set)."""
import dataclasses
import json
import logging

import pytest

from deca.cli import build_parser
from deca.config import Params
from deca.errors import ConfigError
from train.resume import changed_by, params_for_resume


def recorded_run(tmp_path, **train):
    params = Params()
    params = dataclasses.replace(params, train=dataclasses.replace(params.train, **train))
    run_file = tmp_path / "deca_run.json"
    run_file.write_text(json.dumps({"mlflow_run_id": "x", "params": dataclasses.asdict(params)}), encoding="utf-8")
    return run_file, params


def test_the_run_keeps_its_own_settings_and_lists_what_params_yaml_changed(tmp_path, caplog):
    run_file, started = recorded_run(tmp_path, iterations=60, lr=1e-3)
    now = dataclasses.replace(started, train=dataclasses.replace(started.train, iterations=200))
    with caplog.at_level(logging.WARNING):
        params = params_for_resume(run_file, now, {})
    assert params.train.iterations == 60 and params.train.lr == 1e-3
    assert "train.iterations: 60 (now 200 in params.yaml)" in caplog.text


def test_an_explicit_set_changes_a_setting_and_is_checked(tmp_path):
    run_file, started = recorded_run(tmp_path, iterations=60)
    params = params_for_resume(run_file, started, {"train.iterations": 500})
    assert params.train.iterations == 500
    assert changed_by({"train.iterations": 500, "train.lr": started.train.lr}, started) == {"train.iterations": 500}
    with pytest.raises(ConfigError, match=r"train.lr = -1.0: must be > 0"):
        params_for_resume(run_file, started, {"train.lr": -1})


def test_a_run_recorded_without_params_continues_with_the_current_ones(tmp_path):
    (tmp_path / "deca_run.json").write_text(json.dumps({"mlflow_run_id": "x"}), encoding="utf-8")
    now = Params()
    assert params_for_resume(tmp_path / "deca_run.json", now, {}) is now


def test_the_suggested_resume_command_parses():
    """Every training failure suggests `deca train --resume NAME`; argparse used to reject it."""
    args = build_parser("train").parse_args(["train", "--resume", "my-run"])
    assert args.resume == "my-run"
    assert build_parser("train").parse_args(["train", "--resume"]).resume is True
    assert build_parser("train").parse_args(["train"]).resume is False


def test_auto_resume_continues_only_an_interrupted_run_with_the_same_params(tmp_path):
    from train.resume import auto_resume

    params = Params()

    def make(name, finished=False, checkpoint=True, **train):
        run = tmp_path / name
        (run / "checkpoint_00000100").mkdir(parents=True)  # a folder alone is not a checkpoint: Ray's snapshot
        listed = [{"checkpoint_dir_name": "checkpoint_00000100"}] if checkpoint else []  # lists the registered
        (run / "checkpoint_manager_snapshot.json").write_text(json.dumps({"checkpoint_results": listed}))
        p = dataclasses.replace(params, train=dataclasses.replace(params.train, **train))
        info = {"mlflow_run_id": "x", "params": dataclasses.asdict(p), **({"finished": True} if finished else {})}
        (run / "deca_run.json").write_text(json.dumps(info), encoding="utf-8")
        return run

    assert auto_resume(make("interrupted"), params) is True
    assert (tmp_path / "interrupted").exists()
    # the number of workers (and what else only places the work) does not change the model: it continues
    assert auto_resume(make("elastic", num_workers=[1, 2], cpus_per_worker=2.0, max_failures=3), params) is True
    for run in (make("finished", finished=True), make("other", lr=1e-4), make("early", checkpoint=False)):
        assert auto_resume(run, params) is False
        assert not run.exists()  # started over
    assert auto_resume(tmp_path / "never", params) is False


def test_a_corrupt_run_record_is_a_clear_error(tmp_path):
    from deca.errors import DataError

    (tmp_path / "deca_run.json").write_text('{"mlflow_run_id": "x", "par', encoding="utf-8")
    with pytest.raises(DataError, match="the run record cannot be read"):
        params_for_resume(tmp_path / "deca_run.json", Params(), {})
