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
