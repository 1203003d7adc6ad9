"""The whole DVC pipeline on a copy of the repository: `dvc repro` on the default params (the offline main
job on the bundled miniature corpora, every task of data.tasks: all), a no-op second run, the run reproduced
on a clean clone, an experiment with refused values that changes nothing, a `dvc repro` killed during
training that continues from its checkpoint, a one-task param change that reruns only that task's stages and
what follows. Sharing the pipeline (remote, clones, the queue) is tests/infra/test_dvc_share.py.

One `dvc repro` of everything takes a few minutes on two cores; the tests below share it (module fixture)
and run in file order.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.infra.dvc_repo import BIN, TIMEOUT, Repo, ran_stages, reproduced

pytestmark = [pytest.mark.slow, pytest.mark.first]


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    return reproduced(tmp_path_factory, "pipeline")  # the default params, as `make run`


def test_repro_runs_every_stage_and_records_the_decascore(repo):
    stages = set(ran_stages(repo.first))
    defined = set(repo.dvc("stage", "list", "--name-only").stdout.split())
    assert stages == defined
    metrics = json.loads((repo.path / "eval" / "metrics.json").read_text())
    params = yaml.safe_load((repo.path / "params.yaml").read_text())
    assert metrics["split"] == "validation" and 0.0 <= metrics["decascore"] <= 1000.0
    headline = {t: v["headline"] for t, v in metrics["tasks"].items()}
    assert abs(sum(headline.values()) - metrics["decascore"]) < 1e-6
    assert not metrics["partial"] and len(headline) == 10  # evaluate.tasks: decanlp
    for task in headline:
        lines = (repo.path / "eval" / "predictions" / f"{task}.jsonl").read_text().splitlines()
        assert len(lines) == metrics["tasks"][task]["n"]
    shown = json.loads(repo.dvc("metrics", "show", "--json").stdout)
    assert any("decascore" in json.dumps(v) for v in shown.values())
    for rel in ("eval/report/report.md", "eval/report/compare.md", "eval/plots/per_task.csv", "eval/plots/loss.png"):
        assert (repo.path / rel).stat().st_size > 0, rel
    assert "paper (Table 3)" in (repo.path / "eval/report/compare.md").read_text()
    # MLflow lists the training run, with its phase and its evaluation
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=f"sqlite:///{repo.path / 'mlflow.db'}")
    exp = client.get_experiment_by_name(params["train"]["experiment"])
    runs = client.search_runs([exp.experiment_id])
    assert len(runs) == 1 and runs[0].info.status == "FINISHED" and runs[0].info.run_name == "pipeline"
    assert "phase" in runs[0].data.tags
    # deca evaluate logged its scores at the best model's iteration (tag evaluated.validation), after the
    # training run's own validation rounds under the same names
    step = int(runs[0].data.tags["evaluated.validation"])
    logged = [m for m in client.get_metric_history(runs[0].info.run_id, "validation/decascore") if m.step == step]
    assert max(logged, key=lambda m: m.timestamp).value == pytest.approx(metrics["decascore"])


def test_second_repro_is_a_noop(repo):
    again = repo.dvc("repro")
    assert ran_stages(again) == []
    assert "up to date" in repo.dvc("status").stdout


def _digests(repo: Repo) -> dict[str, str]:
    """md5 of params.yaml, dvc.lock and every file of the trained model (the train stage's `persist: true` run)."""
    files = [repo.path / "params.yaml", repo.path / "dvc.lock",
             *sorted(p for p in (repo.path / "checkpoints" / "pipeline").rglob("*") if p.is_file())]
    return {p.relative_to(repo.path).as_posix(): hashlib.md5(p.read_bytes()).hexdigest() for p in files}


@pytest.mark.fault("fault", "make run's run on a clean clone: as recorded, reproduced without --force",
                   "issue 42: reproduce and lineage")
def test_make_run_s_run_reproduces_on_a_clean_clone_without_force(repo, tmp_path):
    """The README's main flow, then its results committed and pushed: a clean clone (`git clone`, `dvc pull`)
    is as the run recorded (dvc.lock and eval/, which `make run` rewrote before `train` started, do not make
    its lineage dirty), and `deca reproduce` retrains it without --force into a folder that is not the
    latest run, bit-identical."""
    repo.commit("after make run")
    repo.dvc("push")
    other = Repo(tmp_path / "clean")
    repo.run("git", "clone", "-q", str(repo.path), str(other.path))
    other.dvc("pull")
    deca = str(BIN / "deca")
    lineage = other.run(deca, "lineage", "pipeline", check=False)
    assert "(clean)" in lineage.stdout and "tree was dirty" not in lineage.stdout, lineage.stdout
    checked = other.run(deca, "reproduce", "pipeline", "--check", check=False)
    assert checked.returncode == 0 and "workspace: as recorded" in checked.stdout, checked.stdout + checked.stderr
    done = other.run(deca, "reproduce", "pipeline", "--no-progress", check=False)
    assert done.returncode == 0 and "identical: the best model of reproduce-" in done.stdout, \
        done.stdout[-3000:] + done.stderr[-3000:]
    (folder,) = (other.path / "checkpoints").glob("reproduce-*")
    assert json.loads((folder / "deca_run.json").read_text())["reproduction_of"] in checked.stdout
    from deca.runs import latest_run

    assert latest_run(other.path / "checkpoints") == other.path / "checkpoints" / "pipeline"


@pytest.mark.fault("fault", "dvc exp run -S zigzag -S iterations=-5: checkpoints, params.yaml, dvc.lock unchanged",
                   "issue 24: data loss")
def test_a_refused_experiment_changes_nothing(repo):
    """`dvc exp run -S` with values the params check refuses stops at the validate stage, before any stage that
    reads params: the trained model (which `deca train --auto-resume` removed, as a finished run, before it
    refused an unknown strategy), params.yaml (which DVC rewrote with the values) and dvc.lock stay as they
    were; each problem is said once, after where its value was."""
    repo.commit("before a refused experiment")
    before = _digests(repo)
    assert "checkpoints/pipeline/best/model.pt" in before
    proc = repo.dvc("exp", "run", "-S", "train.strategy=zigzag", "-S", "train.iterations=-5", check=False)
    try:
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0 and ran_stages(proc) == ["validate"], out[-3000:]
        assert out.count("train.iterations = -5: must be >= 1") == 1 and out.count("unknown strategy 'zigzag'") == 1
        assert re.search(r"params\.yaml:\d+: train\.strategy: unknown strategy 'zigzag'", out)
        assert "params.yaml: put back as in " in out
        assert _digests(repo) == before
        assert repo.run("git", "status", "--porcelain").stdout == ""
        assert "up to date" in repo.dvc("status").stdout
    finally:
        repo.run("git", "checkout", "--", "params.yaml")  # whatever happened, the tests after this one start clean


def _final_model(run_dir: Path) -> dict:
    import torch

    last = sorted(p for p in run_dir.glob("checkpoint_*") if p.is_dir())[-1]
    return torch.load(last / "state.pt", map_location="cpu", weights_only=False)


@pytest.mark.fault("fault", "dvc repro killed after a checkpoint continues from it", "earlier")
def test_repro_killed_after_a_checkpoint_continues_from_it(repo):
    """Ctrl-C during `dvc repro` of the train stage, then `dvc repro`: the run continues from its checkpoint
    (not from iteration 0) and ends with the weights of the uninterrupted run; MLflow says KILLED, then FINISHED."""
    import signal
    import time

    import torch
    from mlflow import MlflowClient

    from train.resume import registered_checkpoints

    run_dir = repo.path / "checkpoints" / "pipeline"
    uninterrupted = _final_model(run_dir)
    old_run = json.loads((run_dir / "deca_run.json").read_text())["mlflow_run_id"]
    proc = subprocess.Popen([str(BIN / "dvc"), "repro", "-s", "-f", "train"], cwd=repo.path, env=repo.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    deadline = time.monotonic() + TIMEOUT

    def new_run_checkpointed() -> bool:
        try:
            info = json.loads((run_dir / "deca_run.json").read_text())
        except (OSError, ValueError):
            return False
        return info["mlflow_run_id"] != old_run and "checkpoint_00000100" in registered_checkpoints(run_dir)

    while not new_run_checkpointed() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0, out[-3000:]
    killed = json.loads((run_dir / "deca_run.json").read_text())
    assert not killed.get("finished")
    client = MlflowClient(tracking_uri=f"sqlite:///{repo.path / 'mlflow.db'}")
    assert client.get_run(killed["mlflow_run_id"]).info.status == "KILLED"

    again = repo.dvc("repro")
    assert "train" in ran_stages(again)
    assert "continuing the interrupted run" in again.stdout + again.stderr
    resumed = client.get_run(killed["mlflow_run_id"])
    assert resumed.info.status == "FINISHED" and int(resumed.data.tags["resumed_from_iteration"]) >= 100
    final = _final_model(run_dir)
    assert final["iteration"] == uninterrupted["iteration"]
    assert all(torch.equal(final["model"][k], uninterrupted["model"][k]) for k in uninterrupted["model"])
    assert ran_stages(repo.dvc("repro")) == []


def test_one_task_param_reruns_only_that_task_and_what_follows(repo):
    repo.commit("first run")
    repo.set_params({"prepare": {"task_options": {"squad": {"max_train_context_tokens": 60}}}})
    changed = json.loads(repo.dvc("status", "--json").stdout)
    assert set(changed) == {"validate", "prepare@squad"}  # validate reads every section (its output never changes)
    rerun = repo.dvc("repro")
    stages = ran_stages(rerun)
    assert [s for s in stages if "@" in s] == ["prepare@squad"] and stages[0] == "validate"
    assert set(stages) - {"validate", "prepare@squad"} <= {"vocab", "contamination", "train", "evaluate", "report"}
    assert ran_stages(repo.dvc("repro")) == []
