"""A real full disk during `deca train` and `deca evaluate` (issue 42; bench/faults/diskfull.py has the cases
with an injected ENOSPC): a tmpfs of a few MB mounted for the test, where this machine allows it (root)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from bench.faults.tools import processed, tiny_checkpoint
from bench.faults.training import RUN, train_argv
from tests.bench.test_faults import fill
from tests.conftest import ROOT

pytestmark = pytest.mark.slow


@contextlib.contextmanager
def tmpfs(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` mounted at `where` (the test is skipped where mounting is not allowed)."""
    where.mkdir()
    if os.geteuid() != 0:
        pytest.skip(f"mounting a {size} tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def deca(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    return subprocess.run([sys.executable, "-m", "deca.cli", *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)


TRAINING = {  # what fills the disk first: (the settings, the file or folder named)
    "the best model": (["train.val_every=2"], "best/model.pt"),
    "Ray Train's checkpoint copy": (["train.val_every=0"], "checkpoint_00000002"),
    "local mode's checkpoint copy": (["train.val_every=0", "train.num_workers=0", "train.max_failures=0"],
                                     "checkpoint_00000002"),
}


@pytest.mark.parametrize("first", list(TRAINING))
def test_a_real_full_disk_during_training_is_named_and_leaves_no_run_folder(tmp_path, first):
    """The default model's first checkpoint (about 4 MB of char n-gram vectors, more with the optimizer) does
    not fit in 3 MB. It was a bare `WorkerGroupError`, and a run folder was left."""
    settings, named = TRAINING[first]
    with tmpfs(tmp_path / "disk", "3m") as disk:
        storage = disk / "checkpoints"
        argv = train_argv(tmp_path, f"train.storage_dir={storage}", "train.iterations=4", "train.save_every=2",
                          "train.log_every=1", "train.token_budget=400", *settings)
        done = deca(argv, tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert f"error: training run '{RUN}' failed: no space left on the device of {storage / RUN / named}" \
               in done.stderr, done.stderr[-3000:]
        assert "set train.storage_dir to a disk with room" in done.stderr, done.stderr[-3000:]
        assert not (storage / RUN).exists(), sorted(str(p) for p in (storage / RUN).rglob("*"))


@pytest.mark.parametrize("leave", [0, 20_000], ids=["full", "fills while writing"])
def test_a_real_full_disk_during_evaluate_is_named_and_leaves_nothing(tmp_path, leave):
    """1 MB, filled but `leave` bytes: no room for the predictions, or for the charts after them. The second
    left the predictions, metrics and report."""
    data, model = processed(tmp_path), tiny_checkpoint(tmp_path)
    with tmpfs(tmp_path / "disk", "1m") as disk:
        fill(disk, leave)
        out = disk / "eval" / "run"
        done = deca(["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out), "--set",
                     f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"], tmp_path)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
        assert f"error: {out}/" in done.stderr and "No space left on device" in done.stderr, done.stderr[-3000:]
        assert "  fix: free space on the disk that holds" in done.stderr, done.stderr[-3000:]
        assert sorted(p.name for p in disk.iterdir()) == ["fill"]  # no folder, no temporary file
