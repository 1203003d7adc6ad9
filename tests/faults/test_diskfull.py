"""A full disk during `deca train` and `deca evaluate` (issue 42): wherever the disk fills, the command says
"no space left" with the path and the fix, in one line, and leaves nothing partial: no run folder when no
checkpoint was registered, no MLflow run RUNNING, no half-written evaluation (the previous one whole).

ENOSPC is injected where the real write fails: in a file torch.save writes, in Ray Train's copy of a checkpoint
(pyarrow), in MLflow's copy into its artifact store, in the charts of `deca evaluate`. The training runs in this
process up to Ray (tools.no_ray); the worker's part runs here too and its error reaches the driver as Ray hands
it over: pickled, in a WorkerGroupError. tests/faults/test_real_disk.py fills a real tmpfs (slow)."""
from __future__ import annotations

import contextlib
import pickle
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.faults.tools import (ENOSPC, RUN, empty_dirs, full_disk, no_ray, patched, processed, refused, run_cli,
                                statuses, tiny_checkpoint, train_argv)
from tests.support import FillingFile

G, ORIGIN = "fault", "issue 42: disk full"


@contextlib.contextmanager
def worker(tmp: Path, work: Callable[[Path], None]) -> Iterator[str]:
    """`deca train` without Ray whose worker does `work(run_dir)`; its error reaches the driver as Ray Train
    hands it over (pickled, in a WorkerGroupError). Yields the MLflow tracking URI."""
    from ray.train.v2.api.exceptions import WorkerGroupError

    from train import driver

    def fit_in_thread(trainer, stop=None, watch=None):
        try:
            work(tmp / "checkpoints" / RUN)
        except Exception as exc:  # noqa: BLE001 - what Ray Train does with a worker's error
            raise WorkerGroupError("[Rank 0]\nTraceback ...", {0: pickle.loads(pickle.dumps(exc))}) from None
        raise AssertionError("the worker's write did not fail")

    with no_ray(tmp, []) as uri, patched(driver, "progress_sink", lambda: None), \
            patched(driver, "build_trainer", lambda *args: None), patched(driver, "fit_in_thread", fit_in_thread):
        yield uri


def assert_nothing_left(tmp: Path, uri: str) -> None:
    """No run folder, no empty folder but train.storage_dir (a configured place, like eval/) and the FAILED MLflow
    run's artifact folder (MLflow's), the MLflow run FAILED."""
    storage = tmp / "checkpoints"
    run_dir = storage / RUN
    assert not run_dir.exists(), f"the run folder was left: {sorted(p.name for p in run_dir.rglob('*'))}"
    left = [d for d in empty_dirs(tmp) if Path(d) != storage and not Path(d).is_relative_to(tmp / "mlruns")]
    assert not left, f"empty folders left: {left}"
    assert statuses(uri).get(RUN) == "FAILED", f"the MLflow run is {statuses(uri).get(RUN)}, not FAILED"


@pytest.mark.fault(G, "deca train: disk full writing the first best model (torch.save, simulated ENOSPC)", ORIGIN)
def test_a_full_disk_at_the_first_best_model(tmp_path, observed, monkeypatch):
    """The first best model (torch.save) fills the disk: torch's own error says neither the file nor why."""
    from tests.support import tiny_model
    from mqan import checkpoint

    def work(run_dir: Path) -> None:
        with monkeypatch.context() as m:
            m.setattr(checkpoint, "open", FillingFile, raising=False)  # the module's open(): the built-in one otherwise
            checkpoint.save_checkpoint(run_dir / "best" / "model.pt", tiny_model())

    with worker(tmp_path, work) as uri:
        line = refused(train_argv(tmp_path), f"no space left on the device of {tmp_path / 'checkpoints' / RUN / 'best'}",
                       "set train.storage_dir", "the run folder")
    assert_nothing_left(tmp_path, uri)
    observed(line)


@pytest.mark.fault(G, "deca train: disk full while Ray Train copies the first checkpoint (simulated ENOSPC)", ORIGIN)
def test_a_full_disk_at_ray_s_checkpoint_copy(tmp_path, observed):
    """Ray Train's copy of the first checkpoint into the run folder fills the disk (pyarrow names no file)."""
    import ray.train

    from train.worker import report_to_ray

    def work(run_dir: Path) -> None:
        (run_dir / "checkpoint_00000002").mkdir()  # what Ray had copied: cut off, never registered
        (run_dir / "checkpoint_00000002" / "state.pt").write_bytes(b"cut off")
        with patched(ray.train, "report", full_disk):
            report_to_ray({}, tmp_path, 2, run_dir=run_dir)

    with worker(tmp_path, work) as uri:
        line = refused(train_argv(tmp_path), f"no space left on the device of {tmp_path / 'checkpoints' / RUN}"
                                             "/checkpoint_00000002", "set train.storage_dir", "the run folder")
    assert_nothing_left(tmp_path, uri)
    observed(line)


@pytest.mark.fault(G, "deca train: MLflow's artifact store full at the start (simulated ENOSPC)", ORIGIN)
def test_a_full_artifact_store(tmp_path, observed):
    """MLflow's artifact store (mlruns) is full when `deca train` logs the run's config: named, the run FAILED."""
    import shutil

    with no_ray(tmp_path, []) as uri, patched(shutil, "copyfileobj", full_disk):
        line = refused(train_argv(tmp_path), "config/params.yaml: No space left on device",
                       "fix: free space on the disk that holds")
    assert_nothing_left(tmp_path, uri)
    observed(line)


@pytest.mark.fault(G, "deca evaluate over an earlier evaluation: disk full at a chart (simulated ENOSPC)", ORIGIN)
def test_evaluate_filling_the_disk_keeps_the_earlier_evaluation(tmp_path, observed):
    """`deca evaluate --out DIR` over an earlier evaluation; the disk fills at the second chart, after the
    predictions, metrics and report are written: named with the fix, the earlier evaluation whole."""
    from deca.io import atomic_write
    from infer import evaluate

    data, out, model = processed(tmp_path), tmp_path / "eval", tiny_checkpoint(tmp_path)
    argv = ["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out), "--set",
            f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"]
    code, _, err = run_cli(argv)
    assert code == 0, f"the first evaluation failed: {err.strip()[-200:]}"
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with patched(evaluate, "figure3_chart", lambda scored, path: atomic_write(path, full_disk)):
        line = refused(argv + ["--max-examples", "2"], f"{out / 'report' / 'figure3.png'}: {ENOSPC}",
                       f"fix: free space on the disk that holds {out / 'report'}")
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before, f"the earlier evaluation changed: {sorted(str(p) for p in set(after) ^ set(before))} " \
                            f"{sorted(str(p) for p in before if after.get(p) != before[p])}"
    observed(line)
