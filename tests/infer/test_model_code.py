"""A logged MLflow model runs its own code/ folder, which holds deca/, mqan/ and infer/ and never train/.

Each model is loaded in a fresh Python process (tests/infer/load_model.py) and must answer exactly as
`deca predict` does with today's code: the model logged now, in a process where `import train` fails; and a
model logged by the code before mqan/ and infer/ left train/ (tests/fixtures/mlflow_model_eb3b4bf.tgz,
written by tests/fixtures/make_mlflow_model_eb3b4bf.py at commit eb3b4bf), which ships its own train/.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.infer.test_mlflow_model import REQUESTS, deca_predict, in_project, logged, model_folder, project  # noqa: F401
from tests.infer.serve.conftest import checkpoint  # noqa: F401

LOADER = Path(__file__).with_name("load_model.py")
OLD_MODEL = ROOT / "tests" / "fixtures" / "mlflow_model_eb3b4bf.tgz"


def load_and_predict(folder: Path, tmp_path: Path, block_train: bool) -> list[dict]:
    """The answers of the MLflow model in `folder` to REQUESTS, from a fresh process run outside the project."""
    requests = tmp_path / "model-requests.json"
    requests.write_text(json.dumps(REQUESTS), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    args = [sys.executable, str(LOADER), str(folder), str(requests)] + (["--block-train"] if block_train else [])
    proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def test_a_logged_model_answers_where_import_train_fails(logged, in_project, tmp_path, capsys):  # noqa: F811
    run_dir, run_id = logged
    expected = deca_predict(["--run", str(run_dir)], tmp_path, capsys)
    assert load_and_predict(model_folder(run_id), tmp_path, block_train=True) == expected


def test_a_model_logged_before_the_move_still_answers(tmp_path, capsys):
    with tarfile.open(OLD_MODEL) as tar:
        tar.extractall(tmp_path, filter="data")
    folder = tmp_path / "premove_model"
    assert (folder / "code" / "train" / "infer" / "mlflow_model.py").is_file()  # the old layout, shipped whole
    expected = deca_predict(["--checkpoint", str(folder / "artifacts" / "model.pt")], tmp_path, capsys)
    assert load_and_predict(folder, tmp_path, block_train=False) == expected


def test_the_loader_blocks_train():
    proc = subprocess.run([sys.executable, str(LOADER), "--check-block"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "import train: blocked" in proc.stdout, proc.stderr
