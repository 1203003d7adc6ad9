"""A real full disk (issues 24 and 42): a tmpfs of a few MB mounted for the test where this machine allows it
(root; skipped elsewhere, a case not run), filled, under `deca predict --output`, `deca score --metrics-out`,
`deca prepare --out`, `deca train` (train.storage_dir on it) and `deca evaluate --out`: the command names the
file and says "No space left on device" in one line, and leaves nothing (no folder, no temporary file, no run
folder). test_diskfull.py and test_outside_training.py inject ENOSPC where these fill the disk (fast)."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.faults.tools import FIXTURES, ROOT, RUN, T, processed, tiny_checkpoint, train_argv

pytestmark = pytest.mark.slow
ORIGIN = "issue 42: disk full"


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


def fill(disk: Path, leave: int = 0) -> None:
    """Fill `disk` up to `leave` bytes from full."""
    size = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave
    with open(disk / "fill", "wb") as f:
        try:
            f.write(b"\0" * max(size, 0))
            f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def deca(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_TRACKING_URI": f"sqlite:///{cwd / 'mlflow.db'}"}
    return subprocess.run([sys.executable, "-m", "deca.cli", *argv], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=600)


def assert_named_and_nothing_left(done: subprocess.CompletedProcess, target: Path, disk: Path) -> None:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"error: {target}" in done.stderr and "No space left on device" in done.stderr, done.stderr[-3000:]
    assert sorted(p.name for p in disk.iterdir()) == ["fill"]  # no folder, no temporary file


def requests_file(tmp: Path, n: int) -> Path:
    path = tmp / "requests.jsonl"
    path.write_text("".join(json.dumps({"context": f"w{i % 10} copy or good bad", "question": "w1 or w2 ?"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def predict_args(tmp: Path, n: int) -> list[str]:
    return ["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--input", str(requests_file(tmp, n)),
            "--device", "cpu", "--no-progress"]


def score_args(tmp: Path) -> list[str]:
    preds = tmp / "sst.jsonl"
    preds.write_text("".join(json.dumps({"id": f"validation-{i}", "prediction": "positive"}) + "\n"
                             for i in range(4)), encoding="utf-8")
    return ["score", "--task", "sst", "--split", "validation", "--predictions", str(preds), "--data",
            str(processed(tmp)), "--no-progress"]


FULL_DISK = {  # name: (bytes left free, the command's arguments but the output, its output option)
    "predict fills the disk while writing": (300_000, lambda tmp: predict_args(tmp, 600), "--output"),
    "predict on a full disk": (0, lambda tmp: predict_args(tmp, 5), "--output"),
    "score on a full disk": (0, score_args, "--metrics-out"),
}


@pytest.mark.fault("fault", "disk full on a real 1 MB tmpfs: deca predict --output, deca score --metrics-out", T)
@pytest.mark.parametrize("how", list(FULL_DISK))
def test_a_real_full_disk_is_named_and_leaves_nothing(tmp_path, how):
    leave, args, option = FULL_DISK[how]
    with tmpfs(tmp_path / "disk", "1m") as disk:
        fill(disk, leave)
        target = disk / "new" / "out"
        assert_named_and_nothing_left(deca([*args(tmp_path), option, str(target)], tmp_path), target, disk)


@pytest.mark.fault("fault", "disk full on a real 1 MB tmpfs: deca prepare --out", T)
def test_a_real_full_disk_during_prepare_is_named_and_leaves_nothing(tmp_path):
    with tmpfs(tmp_path / "disk", "1m") as disk:
        fill(disk)
        target = disk / "new" / "processed"
        done = deca(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                     "--out", str(target)], tmp_path)
        assert_named_and_nothing_left(done, target, disk)


LOCAL = ["train.num_workers=0", "train.max_failures=0"]  # Ray Train's local mode: the same code, no worker
# What fills the disk first: (the settings, the file or folder named). A full disk fails every attempt alike, so
# no restart (max_failures 0: a restart's own path is tests/train/test_training_ray.py's).
TRAINING = {
    "the best model": (["train.val_every=2", *LOCAL], "best/model.pt"),
    "Ray Train's checkpoint copy": (["train.val_every=0", "train.max_failures=0"], "checkpoint_00000002"),
    "local mode's checkpoint copy": (["train.val_every=0", *LOCAL], "checkpoint_00000002"),
}


@pytest.mark.fault("fault", "disk full on a real 3 MB tmpfs as train.storage_dir: the best model, Ray's checkpoint "
                            "copy", ORIGIN)
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


@pytest.mark.fault("fault", "disk full on a real 1 MB tmpfs: deca evaluate --out, before and while writing", ORIGIN)
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
