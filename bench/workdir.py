"""The experiments' work directory (checkpoints/readme-experiment by default): its data, the runs trained
into it, and what those runs read back. Shared by the experiments (experiment_sst, experiment_multitask,
single_task, sst_ablation, transfer_iwslt, issue10_report and table2.sh) and by bench/gpu_pack.py (the GPU
pack carries this workdir's data); it lives in bench/ because scripts import one way, experiments/ -> bench/,
never back (tests/test_layout.py).

`prepare` runs `deca prepare` from the corpora mirror (../shared/corpora) and `deca prepare --vocab` over the
four training sets (skipped when already there); `overlay_overrides` reads partial params files into
`--set`-style overrides; `workdir_params` opens the workdir and gives the params of its runs; `train_run` is one `deca train` run into the workdir; `curve`, `headline_history` and
`best_results` read a run's validation curve (MLflow) and its best checkpoint's scores.
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora"))  # the corpora mirror
TASKS = ["sst", "woz.en", "srl", "schema"]


def prepare(workdir: Path) -> tuple[Path, Path]:
    """Processed data and vocabulary of the four tasks (skipped when already there)."""
    processed, vocab = workdir / "processed", workdir / "vocab.txt"
    deca = [sys.executable, "-m", "deca.cli"]
    if not all((processed / t / "train").is_dir() for t in TASKS):
        subprocess.run([*deca, "prepare", "--tasks", *TASKS, "--splits", "train,validation", "--mirror", str(SHARED),
                        "--out", str(processed)], check=True, cwd=ROOT)
    if not vocab.exists():
        subprocess.run([*deca, "prepare", "--vocab", str(vocab), "--tasks", *TASKS, "--out", str(processed)],
                       check=True, cwd=ROOT)
    return processed, vocab


def overlay_overrides(paths: list[str]) -> dict:
    """Dotted overrides ({"model.dimension": 128, ...}) from partial params files such as
    infra/params/from_scratch.yaml (read and merged as `python -m infra.overlay` does; later files win)."""
    from infra.overlay import leaves, load_overlay, merge

    combined: dict = {}
    for path in paths:
        combined = merge(combined, load_overlay(path))
    return dict(leaves(combined))


def train_run(params, name: str, tasks: list[str], strategy: str, minutes: float, workdir: Path,
              iterations: int = 0):
    """One `deca train` run: `minutes` of training, or exactly `iterations` when given (no time limit)."""
    from train.driver import fit

    tc = dataclasses.replace(params.train, tasks=tasks, strategy=strategy, max_minutes=None if iterations else minutes,
                             iterations=iterations or 100000, storage_dir=str(workdir / "checkpoints"),
                             experiment="readme")
    p = dataclasses.replace(params, train=tc)
    return fit(p, run_name=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}", progress=True, project=workdir)


def headline_history(mlflow_client, run_id: str, task: str) -> list:
    """The MLflow history of `task`'s validation headline, by step: `validation/<task>/headline`, or
    `val/<task>/headline` in runs recorded before the metrics had one namespace."""
    for key in (f"validation/{task}/headline", f"val/{task}/headline"):
        points = mlflow_client.get_metric_history(run_id, key)
        if points:
            return sorted(points, key=lambda m: m.step)
    return []


def curve(outcome, task: str) -> list[tuple[int, float, float]]:
    """(iteration, minutes since the first validation metric of the run's first step, headline)."""
    from deca.metric_logging import client

    c = client(outcome.tracking_uri)
    start = c.get_run(outcome.mlflow_run_id).info.start_time
    return [(m.step, (m.timestamp - start) / 60000, m.value)
            for m in headline_history(c, outcome.mlflow_run_id, task)]


def best_results(outcome) -> dict[str, float]:
    """Per-task headline metrics of the run's best checkpoint."""
    import torch

    extra = torch.load(outcome.best / "model.pt", map_location="cpu", weights_only=True)["extra"]
    return {t: r["headline"]["value"] for t, r in extra["results"].items()} | {"_iteration": extra["iteration"]}


def workdir_params(workdir: Path, params_path: str, overlays: list[str], sets: list[str]):
    """(params, overrides) of the runs in `workdir`: the directory made, its data prepared, MLflow pointed at
    <workdir>/mlflow.db unless MLFLOW_TRACKING_URI says otherwise, the workdir's data and vocabulary in params,
    the experiments' defaults (validation every 50 iterations, 2 Ray workers, one restart), then --overlay files, then --set."""
    from deca.checks import load_params
    from deca.params_args import parse_overrides

    workdir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{workdir / 'mlflow.db'}")
    processed, vocab = prepare(workdir)
    overrides = {"train.val_every": 50, "train.save_every": 200, "train.log_every": 10,
                 "train.num_workers": 2, "train.cpus_per_worker": 1.0, "train.max_failures": 1, **overlay_overrides(overlays),
                 **parse_overrides(sets)}
    params = load_params(params_path, overrides=overrides)
    params = dataclasses.replace(params, data=dataclasses.replace(
        params.data, processed_dir=str(processed), vocab_path=str(vocab)))
    return params, overrides
