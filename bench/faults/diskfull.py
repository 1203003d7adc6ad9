"""A full disk during `deca train` and `deca evaluate` (issue 42): wherever the disk fills, the command says
"no space left" with the path and the fix, in one line, and leaves nothing partial: no run folder when no
checkpoint was registered, no MLflow run RUNNING, no half-written evaluation (the previous one whole).

The fast cases inject ENOSPC where the real write fails: in a file torch.save writes, in Ray Train's copy of
a checkpoint (pyarrow), in MLflow's copy into its artifact store, in the charts of `deca evaluate`. The
training runs in this process up to Ray (bench/faults/training.py's no_ray); the worker's part runs here too
and its error reaches the driver as Ray hands it over: pickled, in a WorkerGroupError. The slow cases fill a
real tmpfs (tests/bench/test_diskfull.py).
"""
from __future__ import annotations

import contextlib
import errno
import pickle
from pathlib import Path
from typing import Callable, Iterator

from bench.faults.case import Case, must, patched
from bench.faults.tools import ENOSPC, empty_dirs, full_disk, processed, refused, run_cli, tiny_checkpoint
from bench.faults.training import RUN, no_ray, statuses, train_argv

ORIGIN = "issue 42: disk full"
SLOW = "tests/bench/test_diskfull.py::"


class FullFile:
    """A file on a full disk: every write fails with ENOSPC, naming no file, as write() does."""

    def __init__(self, path, mode="wb"):
        self.f = open(path, mode)

    def write(self, data):
        raise OSError(errno.ENOSPC, ENOSPC)

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


@contextlib.contextmanager
def worker(tmp: Path, work: Callable[[Path], None]) -> Iterator[str]:
    """`deca train` without Ray whose worker does `work(run_dir)`; its error reaches the driver as Ray Train
    hands it over (pickled, in a WorkerGroupError). Yields the MLflow tracking URI."""
    from ray.train.v2.api.exceptions import WorkerGroupError

    from train import driver

    def fit_in_thread(trainer, stop=None):
        try:
            work(tmp / "checkpoints" / RUN)
        except Exception as exc:  # noqa: BLE001 - what Ray Train does with a worker's error
            raise WorkerGroupError("[Rank 0]\nTraceback ...", {0: pickle.loads(pickle.dumps(exc))}) from None
        raise AssertionError("the worker's write did not fail")

    with no_ray(tmp, []) as uri, patched(driver, "_progress_sink", lambda: None), \
            patched(driver, "build_trainer", lambda *args: None), patched(driver, "fit_in_thread", fit_in_thread):
        yield uri


def nothing_left(tmp: Path, uri: str) -> None:
    """No run folder, no empty folder but train.storage_dir (a configured place, like eval/) and the FAILED MLflow
    run's artifact folder (MLflow's), the MLflow run FAILED."""
    storage = tmp / "checkpoints"
    run_dir = storage / RUN
    must(not run_dir.exists(), f"the run folder was left: {sorted(p.name for p in run_dir.rglob('*'))}"
         if run_dir.exists() else "")
    left = [d for d in empty_dirs(tmp) if Path(d) != storage and not Path(d).is_relative_to(tmp / "mlruns")]
    must(not left, f"empty folders left: {left}")
    must(statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED")


def best_model_on_a_full_disk(tmp: Path) -> str:
    """The first best model (torch.save) fills the disk: torch's own error says neither the file nor why."""
    from bench.support import tiny_model
    from mqan import checkpoint

    def work(run_dir: Path) -> None:
        checkpoint.open = FullFile  # the module's open(): the built-in one otherwise
        try:
            checkpoint.save_checkpoint(run_dir / "best" / "model.pt", tiny_model())
        finally:
            del checkpoint.open

    with worker(tmp, work) as uri:
        line = refused(train_argv(tmp), f"no space left on the device of {tmp / 'checkpoints' / RUN / 'best'}",
                       "set train.storage_dir", "the run folder")
    nothing_left(tmp, uri)
    return line


def checkpoint_copy_on_a_full_disk(tmp: Path) -> str:
    """Ray Train's copy of the first checkpoint into the run folder fills the disk (pyarrow names no file)."""
    import ray.train

    from train.worker import report_to_ray

    def work(run_dir: Path) -> None:
        (run_dir / "checkpoint_00000002").mkdir()  # what Ray had copied: cut off, never registered
        (run_dir / "checkpoint_00000002" / "state.pt").write_bytes(b"cut off")
        with patched(ray.train, "report", full_disk):
            report_to_ray({}, tmp, 2, run_dir=run_dir)

    with worker(tmp, work) as uri:
        line = refused(train_argv(tmp), f"no space left on the device of {tmp / 'checkpoints' / RUN}"
                                        "/checkpoint_00000002", "set train.storage_dir", "the run folder")
    nothing_left(tmp, uri)
    return line


def artifact_store_full(tmp: Path) -> str:
    """MLflow's artifact store (mlruns) is full when `deca train` logs the run's config: named, the run FAILED."""
    import shutil

    with no_ray(tmp, []) as uri, patched(shutil, "copyfileobj", full_disk):
        line = refused(train_argv(tmp), "config/params.yaml: No space left on device",
                       "fix: free space on the disk that holds")
    nothing_left(tmp, uri)
    return line


def evaluate_fills_the_disk(tmp: Path) -> str:
    """`deca evaluate --out DIR` over an earlier evaluation; the disk fills at the second chart, after the
    predictions, metrics and report are written: named with the fix, the earlier evaluation whole."""
    from deca.io import atomic_write
    from infer import evaluate

    data, out, model = processed(tmp), tmp / "eval", tiny_checkpoint(tmp)
    argv = ["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out), "--set",
            f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"]
    code, _, err = run_cli(argv)
    must(code == 0, f"the first evaluation failed: {err.strip()[-200:]}")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with patched(evaluate, "figure3_chart", lambda scored, path: atomic_write(path, full_disk)):
        line = refused(argv + ["--max-examples", "2"], f"{out / 'report' / 'figure3.png'}: {ENOSPC}",
                       f"fix: free space on the disk that holds {out / 'report'}")
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    must(after == before, f"the earlier evaluation changed: {sorted(str(p) for p in set(after) ^ set(before))} "
                          f"{sorted(str(p) for p in before if after.get(p) != before[p])}")
    return line


def cases() -> list[Case]:
    """A full disk during training and evaluation."""
    g = "fault"
    return [
        Case(g, "deca train: disk full writing the first best model (torch.save, simulated ENOSPC)", ORIGIN,
             best_model_on_a_full_disk),
        Case(g, "deca train: disk full while Ray Train copies the first checkpoint (simulated ENOSPC)", ORIGIN,
             checkpoint_copy_on_a_full_disk),
        Case(g, "deca train: MLflow's artifact store full at the start (simulated ENOSPC)", ORIGIN,
             artifact_store_full),
        Case(g, "deca evaluate over an earlier evaluation: disk full at a chart (simulated ENOSPC)", ORIGIN,
             evaluate_fills_the_disk),
        Case(g, "disk full on a real 3 MB tmpfs as train.storage_dir: the best model, Ray's checkpoint copy", ORIGIN,
             test=SLOW + "test_a_real_full_disk_during_training_is_named_and_leaves_no_run_folder"),
        Case(g, "disk full on a real 1 MB tmpfs: deca evaluate --out, before and while writing", ORIGIN,
             test=SLOW + "test_a_real_full_disk_during_evaluate_is_named_and_leaves_nothing"),
    ]
