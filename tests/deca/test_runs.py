"""deca/runs.py: which run folder predict, serve and evaluate use by default."""
from __future__ import annotations

import json
import os
import time

from deca.runs import BEST, RUN_FILE, resolve_checkpoint


def test_the_default_model_skips_later_runs_without_a_best_model_saying_so(tmp_path, capsys):
    for age, name, best in ((30, "trained", True), (20, "failed-early", False), (10, "stopped", False)):
        (tmp_path / name).mkdir()
        (tmp_path / name / RUN_FILE).write_text(json.dumps({"mlflow_run_id": name}))
        if best:
            (tmp_path / name / BEST).parent.mkdir()
            (tmp_path / name / BEST).write_bytes(b"model")
        os.utime(tmp_path / name / RUN_FILE, (time.time() - age, time.time() - age))
    path, info = resolve_checkpoint(None, None, str(tmp_path))
    assert path == tmp_path / "trained" / BEST and info == {"mlflow_run_id": "trained"}
    err = capsys.readouterr().err.splitlines()
    assert [line.split(" under ")[0] for line in err] == ["note: skipping run stopped", "note: skipping run failed-early"]
    assert all("it has no best model yet" in line for line in err)


def test_a_reproduction_is_not_the_latest_run_until_adopted(tmp_path, capsys):
    from deca.runs import REPRODUCTION, adopt, latest_run

    for age, name, extra in ((20, "pipeline", {}), (10, "reproduce-3f2a0c1d-1", {REPRODUCTION: "3f2a0c1d" * 4})):
        (tmp_path / name / BEST).parent.mkdir(parents=True)
        (tmp_path / name / BEST).write_bytes(b"model")
        (tmp_path / name / RUN_FILE).write_text(json.dumps({"mlflow_run_id": name, **extra}))
        os.utime(tmp_path / name / RUN_FILE, (time.time() - age, time.time() - age))
    path, info = resolve_checkpoint(None, None, str(tmp_path))
    assert path == tmp_path / "pipeline" / BEST and latest_run(tmp_path) == tmp_path / "pipeline"
    err = capsys.readouterr().err
    assert f"skipped run reproduce-3f2a0c1d-1 under {tmp_path}: a reproduction of run {'3f2a0c1d' * 4}" in err
    assert f"--run {tmp_path / 'reproduce-3f2a0c1d-1'}" in err and "--adopt" in err
    adopt(tmp_path / "reproduce-3f2a0c1d-1")
    assert latest_run(tmp_path) == tmp_path / "reproduce-3f2a0c1d-1"
    assert resolve_checkpoint(None, None, str(tmp_path))[1]["reproduced_from"] == "3f2a0c1d" * 4
