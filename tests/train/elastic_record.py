"""`--elastic-record PATH`: the elastic training test (tests/train/test_elastic_ray.py) writes the record of
docs/results/scale.md's elastic section: the command, commit, date, machine, load average before and after,
the settings, and each run's per-step training losses, workers and wall time.

    python -m pytest tests/train/test_elastic_ray.py -m slow --elastic-record docs/results/records/scale/elastic.json
"""
from __future__ import annotations

import json
import shlex
import time
from pathlib import Path
from typing import Any

import pytest


def pytest_addoption(parser):
    parser.addoption("--elastic-record", metavar="PATH", type=Path, default=None,
                     help="write the runs of tests/train/test_elastic_ray.py as the record of docs/results/scale.md's "
                          "elastic section")


@pytest.fixture
def elastic_record(request):
    """`write(settings, figures)`: the record at --elastic-record's path (a no-op without the option)."""
    from bench.record import commit, load, this_machine

    path = request.config.getoption("elastic_record")
    started = {"command": shlex.join(["python", "-m", "pytest", *request.config.invocation_params.args]),
               "commit": commit(), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
               "machine": this_machine(), "load_before": load()}

    def write(settings: dict[str, Any], figures: dict[str, Any]) -> None:
        if path is None:
            return
        from deca.io import atomic_write

        text = json.dumps({**started, "load_after": load(), "settings": settings, **figures}, indent=1) + "\n"
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))

    return write
