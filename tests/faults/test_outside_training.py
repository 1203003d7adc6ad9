"""Faults of issues 24 and 34 outside training: a full disk (simulated ENOSPC) under prepare, evaluate and
predict, a missing GPU, a resumed run's progress, a refused experiment that must put params.yaml back, an
overlay written while an experiment holds the workspace. Kills, Ctrl-C, SIGTERM and DVC experiments are the
slow tests of tests/infra/, tests/deca/, tests/infer/serve/ and tests/infra/test_dvc_*.py."""
from __future__ import annotations

import contextlib
import io
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.faults.tools import (ASK, ENOSPC, FIXTURES, ROOT, T, U, empty_dirs, environment, full_disk, patched,
                                predict_refuses, processed, refused, tiny_checkpoint)

G, C = "fault", "issue 34: shutdown and concurrency"


@pytest.mark.fault(G, "disk full during deca prepare (simulated ENOSPC)", T)
def test_a_full_disk_under_prepare(tmp_path, observed):
    """`deca prepare` on a disk that fills while Beam writes: names the file, leaves no empty folder."""
    import pyarrow.parquet as pq

    params = tmp_path / "params.yaml"
    params.write_text("prepare:\n  rows_per_shard: 3\n", encoding="utf-8")
    out = tmp_path / "processed"
    with patched(pq, "write_table", full_disk):
        line = refused(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                        "--out", str(out), "--params", str(params)],
                       f"{out / 'sst' / 'validation' / 'part-00000.parquet'}: {ENOSPC}")
    assert not empty_dirs(tmp_path), f"empty folders left: {empty_dirs(tmp_path)}"
    observed(line)


@pytest.mark.fault(G, "disk full during deca evaluate (simulated ENOSPC)", T)
def test_a_full_disk_under_evaluate(tmp_path, observed):
    """`deca evaluate --out DIR` on a full disk: names the file under DIR, leaves no empty folder."""
    from deca import io as deca_io

    data, out, model = processed(tmp_path), tmp_path / "eval" / "run", tiny_checkpoint(tmp_path)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out),
                        "--set", f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"],
                       ENOSPC, f"{out}/")
    assert not empty_dirs(tmp_path), f"empty folders left: {empty_dirs(tmp_path)}"
    observed(line)


@pytest.mark.fault(G, "disk full during deca predict --output (simulated ENOSPC)", T)
def test_a_full_disk_under_predict(tmp_path, observed):
    """`deca predict --output DIR/x.jsonl` on a full disk: names the file, creates no DIR."""
    from deca import io as deca_io

    out, model = tmp_path / "answers" / "x.jsonl", tiny_checkpoint(tmp_path)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["predict", "--checkpoint", str(model), *ASK, "--device", "cpu", "--output", str(out)],
                       f"{out}: {ENOSPC}")
    assert not (tmp_path / "answers").exists(), f"{tmp_path / 'answers'} was left behind"
    observed(line)


@pytest.mark.fault(G, "deca predict --device cuda without a GPU", T)
def test_cuda_without_a_gpu(tmp_path, observed):
    """`deca predict --device cuda` where CUDA is not available says so, with the fix."""
    import torch

    with patched(torch.cuda, "is_available", lambda: False):
        observed(predict_refuses(tmp_path, ["--device", "cuda"], "--device cuda: CUDA is not available on this machine"))


@pytest.mark.fault(G, "a resumed run's progress starts at the resumed iteration", U)
def test_a_resumed_run_s_progress(observed):
    """The progress line of a run resumed at iteration 100 starts there, not at 0."""
    from train.progress import ProgressBar

    line = ProgressBar(None, total=160, stream=io.StringIO(), start=100).line(elapsed=20.0)
    assert line.startswith("train: iteration 100/160") and "resuming from 100" in line, \
        f"a run resumed at iteration 100 shows: {line}"
    observed(line)


@pytest.mark.fault(G, "dvc exp run -S train.strategy=zigzag: validate puts params.yaml back", "issue 24: data loss")
def test_a_refused_experiment_puts_params_back(tmp_path, observed):
    """`dvc exp run -S train.strategy=zigzag -S train.iterations=-5`: its validate stage refuses the values and
    puts params.yaml back as in the baseline commit (tests/infra/test_dvc_repro.py runs the experiment itself)."""
    from dvc.utils.hydra import apply_overrides

    def git(*args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        return subprocess.run(["git", *args], cwd=tmp_path, env=env, check=True, capture_output=True, text=True).stdout

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    git("init", "-q")
    git("add", "params.yaml")
    git("commit", "-q", "-m", "baseline")
    baseline = (tmp_path / "params.yaml").read_bytes()
    apply_overrides(str(tmp_path / "params.yaml"), ["train.strategy=zigzag", "train.iterations=-5"])
    with environment(DVC_EXP_BASELINE_REV=git("rev-parse", "HEAD").strip(), DVC_ROOT=str(tmp_path)):
        line = refused(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"],
                       "unknown strategy 'zigzag'", "train.iterations = -5: must be >= 1", "put back as in")
    assert (tmp_path / "params.yaml").read_bytes() == baseline, "params.yaml is not as in the baseline"
    assert not (tmp_path / "params.valid").exists(), "the validate stamp was written"
    observed(line)


@pytest.mark.fault(G, "infra.overlay --write while dvc exp run holds the workspace: refused, params.yaml untouched", C)
def test_no_overlay_while_an_experiment_runs(tmp_path, observed):
    """`python -m infra.overlay --write` while `dvc exp run` holds the workspace (DVC's .dvc/tmp/lock): refused,
    params.yaml untouched (it is the params.yaml the running experiment reads)."""
    import zc.lockfile

    from infra import overlay

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    before = (tmp_path / "params.yaml").read_bytes()
    err = io.StringIO()
    held = zc.lockfile.LockFile(str(tmp_path / ".dvc" / "tmp" / "lock"))
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = overlay.main(["--write", str(ROOT / "infra/params/gpu.yaml"), "--params",
                                 str(tmp_path / "params.yaml")])
    finally:
        held.close()
    assert code != 0, "the overlay was written while DVC held the workspace"
    assert (tmp_path / "params.yaml").read_bytes() == before, "params.yaml was changed"
    assert "Traceback" not in err.getvalue(), f"a traceback: {err.getvalue().strip().splitlines()[-1:]}"
    observed(err.getvalue().strip().splitlines()[0])
