"""Faults of issues 12, 24 and 34 outside training: a full disk, a kill, Ctrl-C, a missing GPU, a bad
checkpoint, a refused experiment, SIGTERM to the server, two experiments in one workspace."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
from pathlib import Path

from bench import bad_inputs
from bench.faults.bad_input import ISSUE12_FAULTS, T, U, issue12
from bench.faults.case import Case, environment, must, patched
from bench.faults.tools import (ASK, ENOSPC, FIXTURES, ROOT, empty_dirs, full_disk, predict_refuses, processed,
                                refused, tiny_checkpoint)

C = "issue 34: shutdown and concurrency"


def resumed_progress(tmp: Path) -> str:
    """The progress line of a run resumed at iteration 100 starts there, not at 0."""
    from train.progress import ProgressBar

    line = ProgressBar(None, total=160, stream=io.StringIO(), start=100).line(elapsed=20.0)
    must(line.startswith("train: iteration 100/160") and "resuming from 100" in line,
         f"a run resumed at iteration 100 shows: {line}")
    return line



def disk_full_prepare(tmp: Path) -> str:
    """`deca prepare` on a disk that fills while Beam writes: names the file, leaves no empty folder."""
    import pyarrow.parquet as pq

    params = tmp / "params.yaml"
    params.write_text("prepare:\n  rows_per_shard: 3\n", encoding="utf-8")
    out = tmp / "processed"
    with patched(pq, "write_table", full_disk):
        line = refused(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                        "--out", str(out), "--params", str(params)],
                       f"{out / 'sst' / 'validation' / 'part-00000.parquet'}: {ENOSPC}")
    must(not empty_dirs(tmp), f"empty folders left: {empty_dirs(tmp)}")
    return line


def disk_full_evaluate(tmp: Path) -> str:
    """`deca evaluate --out DIR` on a full disk: names the file under DIR, leaves no empty folder."""
    from deca import io as deca_io

    data, out, model = processed(tmp), tmp / "eval" / "run", tiny_checkpoint(tmp)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out),
                        "--set", f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"],
                       ENOSPC, f"{out}/")
    must(not empty_dirs(tmp), f"empty folders left: {empty_dirs(tmp)}")
    return line


def disk_full_predict(tmp: Path) -> str:
    """`deca predict --output DIR/x.jsonl` on a full disk: names the file, creates no DIR."""
    from deca import io as deca_io

    out, model = tmp / "answers" / "x.jsonl", tiny_checkpoint(tmp)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["predict", "--checkpoint", str(model), *ASK, "--device", "cpu",
                        "--output", str(out)], f"{out}: {ENOSPC}")
    must(not (tmp / "answers").exists(), f"{tmp / 'answers'} was left behind")
    return line


def cuda_without_a_gpu(tmp: Path) -> str:
    """`deca predict --device cuda` where CUDA is not available says so, with the fix."""
    import torch

    with patched(torch.cuda, "is_available", lambda: False):
        return predict_refuses(["--device", "cuda"], "--device cuda: CUDA is not available on this machine")(tmp)


def refused_experiment_puts_params_back(tmp: Path) -> str:
    """`dvc exp run -S train.strategy=zigzag -S train.iterations=-5`: its validate stage refuses the values and
    puts params.yaml back as in the baseline commit (the slow DVC test runs the experiment itself)."""
    import shutil

    from dvc.utils.hydra import apply_overrides

    def git(*args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        return subprocess.run(["git", *args], cwd=tmp, env=env, check=True, capture_output=True, text=True).stdout

    shutil.copy(ROOT / "params.yaml", tmp / "params.yaml")
    git("init", "-q")
    git("add", "params.yaml")
    git("commit", "-q", "-m", "baseline")
    baseline = (tmp / "params.yaml").read_bytes()
    apply_overrides(str(tmp / "params.yaml"), ["train.strategy=zigzag", "train.iterations=-5"])
    with environment(DVC_EXP_BASELINE_REV=git("rev-parse", "HEAD").strip(), DVC_ROOT=str(tmp)):
        line = refused(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"],
                       "unknown strategy 'zigzag'", "train.iterations = -5: must be >= 1", "put back as in")
    must((tmp / "params.yaml").read_bytes() == baseline, "params.yaml is not as in the baseline")
    must(not (tmp / "params.valid").exists(), "the validate stamp was written")
    return line



def no_overlay_while_an_experiment_runs(tmp: Path) -> str:
    """`python -m infra.overlay --write` while `dvc exp run` holds the workspace (DVC's .dvc/tmp/lock): refused,
    params.yaml untouched (it is the params.yaml the running experiment reads)."""
    import shutil

    import zc.lockfile

    from infra import overlay

    shutil.copy(ROOT / "params.yaml", tmp / "params.yaml")
    (tmp / ".dvc" / "tmp").mkdir(parents=True)
    before = (tmp / "params.yaml").read_bytes()
    err = io.StringIO()
    held = zc.lockfile.LockFile(str(tmp / ".dvc" / "tmp" / "lock"))
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = overlay.main(["--write", str(ROOT / "infra/params/gpu.yaml"), "--params", str(tmp / "params.yaml")])
    finally:
        held.close()
    must(code != 0, "the overlay was written while DVC held the workspace")
    must((tmp / "params.yaml").read_bytes() == before, "params.yaml was changed")
    must("Traceback" not in err.getvalue(), f"a traceback: {err.getvalue().strip().splitlines()[-1:]}")
    return err.getvalue().strip().splitlines()[0]


def cases() -> list[Case]:
    """The faults: a full disk, a kill, a missing GPU or package, a bad checkpoint, a refused experiment."""
    g = "fault"
    return [
        *(Case(g, name, "issue 12", issue12(fn)) for name, fn in bad_inputs.CASES if name in ISSUE12_FAULTS),
        Case(g, "disk full during deca prepare (simulated ENOSPC)", T, disk_full_prepare),
        Case(g, "disk full during deca evaluate (simulated ENOSPC)", T, disk_full_evaluate),
        Case(g, "disk full during deca predict --output (simulated ENOSPC)", T, disk_full_predict),
        Case(g, "disk full on a real 1 MB tmpfs: deca predict --output, deca score --metrics-out", T,
             test="tests/bench/test_faults.py::test_a_real_full_disk_is_named_and_leaves_nothing"),
        Case(g, "disk full on a real 1 MB tmpfs: deca prepare --out", T,
             test="tests/bench/test_faults.py::test_a_real_full_disk_during_prepare_is_named_and_leaves_nothing"),
        Case(g, "deca predict --device cuda without a GPU", T, cuda_without_a_gpu),
        Case(g, "dvc exp run -S train.strategy=zigzag: validate puts params.yaml back", "issue 24: data loss",
             refused_experiment_puts_params_back),
        Case(g, "dvc exp run -S zigzag -S iterations=-5: checkpoints, params.yaml, dvc.lock unchanged",
             "issue 24: data loss", test="tests/test_dvc_pipeline.py::test_a_refused_experiment_changes_nothing"),
        Case(g, "SIGKILL of a pytest run holding the MLflow server leaves no process", "issue 24: orphans",
             test="tests/infra/test_processes.py::test_a_killed_test_run_leaves_no_mlflow_server"),
        Case(g, "SIGKILL of a training driver leaves no local Ray", "earlier",
             test="tests/infra/test_processes.py::test_a_killed_driver_leaves_no_local_ray"),
        Case(g, "Ctrl-C during deca prepare: exit 130, no staging folder", "earlier",
             test="tests/deca/test_cli_errors.py::test_ctrl_c_during_prepare"),
        Case(g, "dvc repro killed after a checkpoint continues from it", "earlier",
             test="tests/test_dvc_pipeline.py::test_repro_killed_after_a_checkpoint_continues_from_it"),
        Case(g, "a resumed run's progress starts at the resumed iteration", U, resumed_progress),
        Case(g, "SIGTERM to deca serve with 5 calls in flight: all answered, exit 0", C,
             test="tests/infer/serve/test_serve_cli.py::test_sigterm_answers_the_calls_in_flight_and_exits_0"),
        Case(g, "infra.overlay --write while dvc exp run holds the workspace: refused, params.yaml untouched", C,
             no_overlay_while_an_experiment_runs),
        Case(g, "two experiments side by side through the queue (the README's way): both saved, no exec ref left",
             C, test="tests/test_dvc_pipeline.py::test_two_strategies_side_by_side_through_the_queue_then_compare"),
        Case(g, "two dvc exp run at once in one workspace: the first is saved, no exec ref left", C,
             test="tests/test_dvc_pipeline.py::test_two_workspace_experiments_at_once_leave_the_first_saved"),
    ]
