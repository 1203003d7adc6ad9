"""The inner test run of test_processes.py (not collected by a plain `pytest`: the name is not test_*.py).

test_processes.py starts `pytest tests/infra/orphan_target.py::TEST` in a subprocess with DECA_ORPHAN_PROBE
naming a scratch folder, waits for TEST to write `ready.json` there, then kills that pytest with SIGKILL and
checks that nothing it started is left. Each test here only starts something and waits to be killed.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

PROBE = Path(os.environ.get("DECA_ORPHAN_PROBE", "."))


def ready(**info) -> None:
    (PROBE / "ready.tmp").write_text(json.dumps({"pytest_pid": os.getpid(), **info}))
    (PROBE / "ready.tmp").replace(PROBE / "ready.json")


def test_hold_the_mlflow_server(mlflow_server):
    """The session's MLflow server fixture (tests/infra/conftest.py), held until the run is killed."""
    ready(url=mlflow_server.url, server_pid=mlflow_server.daemon.proc.pid)
    time.sleep(600)


def test_hold_plain_children():
    """Processes started without any guard of their own, one in a session of its own: only the test
    session's guard (tests/conftest.py) can end them."""
    kids = [subprocess.Popen(["sleep", "600"]),
            subprocess.Popen(["bash", "-c", "sleep 600 & sleep 600 & wait"], start_new_session=True)]
    ready(children=[k.pid for k in kids])
    time.sleep(600)
