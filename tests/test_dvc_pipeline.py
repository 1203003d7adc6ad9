"""The whole DVC pipeline on a copy of the repository: `dvc repro` on the default params (the offline main
job on the bundled miniature corpora), a no-op second run, an experiment with refused values that changes
nothing, a one-task param change that reruns only that task's stages and what follows; then the DVC remote
(a local directory set by infra/dvc/remote.sh): `dvc push`, a git clone that pulls and reruns nothing (and
restores an older run from the run cache); two strategies side by side through DVC's queue, compared with
`deca compare`; one of them moved by `dvc exp push/pull`; last, two `dvc exp run` at once in the one workspace
(a known failure of DVC's, a strict xfail: the fault bench's record reports it as not handled).

One `dvc repro` of everything takes a few minutes on two cores; the tests below share it (module fixture)
and run in file order.
"""
from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.slow

BIN = ROOT / ".venv" / "bin"
TIMEOUT = 1500
QUICK = ["-S", "train.iterations=6", "-S", "train.val_every=6", "-S", "train.save_every=6",
         "-S", "train.log_every=2", "-S", "evaluate.max_answer_length=8"]  # a short experiment


def copy_worktree(dest: Path) -> None:
    """Tracked and untracked-but-not-ignored files of the repository (what a commit would hold)."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


class Repo:
    def __init__(self, path: Path):
        self.path = path
        self.env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(path),
                    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
                    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        self.env.pop("MLFLOW_TRACKING_URI", None)

    def run(self, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
        proc = subprocess.run(list(cmd), cwd=self.path, env=self.env, capture_output=True, text=True, timeout=TIMEOUT)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def dvc(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return self.run(str(BIN / "dvc"), *args, check=check)

    def commit(self, message: str) -> None:
        self.run("git", "add", "-A")
        self.run("git", "commit", "-q", "--allow-empty", "-m", message)

    def set_params(self, values: dict) -> None:
        from infra.params_yaml import write

        write(self.path / "params.yaml", values)


def ran_stages(proc: subprocess.CompletedProcess) -> list[str]:
    return re.findall(r"Running stage '([^']+)'", proc.stdout)


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    path = tmp_path_factory.mktemp("pipeline")
    copy_worktree(path)
    repo = Repo(path)
    repo.run("git", "init", "-q")
    # the DVC remote is part of the repository from its first commit (every commit's outputs can be pushed)
    repo.store = tmp_path_factory.mktemp("dvc-remote")
    repo.run("bash", "infra/dvc/remote.sh", str(repo.store))
    repo.commit("a fresh clone")
    repo.first = repo.dvc("repro")  # the default params, as `make run`
    return repo


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


@pytest.fixture(scope="module")
def clone(repo, tmp_path_factory) -> Repo:
    """`dvc push` of every commit's outputs and the run cache to the local remote, then the repository as a
    team shares it (a bare git repo, remote "hub") cloned into a second directory, with `dvc pull`."""
    repo.commit("before the push")
    repo.pushed = repo.dvc("push", "--all-commits", "--run-cache")
    hub = tmp_path_factory.mktemp("hub") / "decanlp.git"
    repo.run("git", "clone", "-q", "--bare", str(repo.path), str(hub))
    repo.run("git", "remote", "add", "hub", str(hub))
    other = Repo(tmp_path_factory.mktemp("clone") / "decanlp")
    repo.run("git", "clone", "-q", str(hub), str(other.path))
    other.pulled = other.dvc("pull")
    return other


def _commit_named(repo: Repo, message: str) -> str:
    return repo.run("git", "log", "--format=%H", f"--grep=^{message}$").stdout.split()[0]


def test_push_then_a_fresh_clone_pulls_and_reruns_nothing(repo, clone):
    assert "pushed" in repo.pushed.stdout and any(p.is_file() for p in (repo.store / "files").rglob("*"))
    assert str(repo.store) in (clone.path / ".dvc" / "config").read_text()  # the remote comes with git
    assert "fetched" in clone.pulled.stdout
    for rel in ("data/vocab.txt", "checkpoints/pipeline/deca_run.json", "eval/predictions/squad.jsonl",
                "eval/report/report.md"):
        assert (clone.path / rel).read_bytes() == (repo.path / rel).read_bytes(), rel
    assert "up to date" in clone.dvc("status").stdout
    assert ran_stages(clone.dvc("repro")) == []
    # The run cache: the params of the first run (an older commit) for one task give back that run's
    # outputs, fetched from the remote, instead of running the stages again.
    first = _commit_named(clone, "first run")
    old = yaml.safe_load(clone.run("git", "show", f"{first}:params.yaml").stdout)
    clone.set_params({"prepare": {"task_options": {"squad": old["prepare"]["task_options"]["squad"]}}})
    restored = clone.dvc("repro", "--pull", "-s", "prepare@squad", "vocab")
    assert ran_stages(restored) == []
    for stage in ("prepare@squad", "vocab"):
        assert f"Stage '{stage}' is cached - skipping run" in restored.stdout, restored.stdout[-2000:]
    old_lock = yaml.safe_load(clone.run("git", "show", f"{first}:dvc.lock").stdout)
    vocab_md5 = old_lock["stages"]["vocab"]["outs"][0]["md5"]
    assert hashlib.md5((clone.path / "data" / "vocab.txt").read_bytes()).hexdigest() == vocab_md5
    assert "up to date" in clone.dvc("status", "prepare@squad", "vocab").stdout
    clone.run("git", "checkout", "--", ".")  # back to the clone's commit, for the experiment test
    clone.dvc("checkout")
    assert "up to date" in clone.dvc("status").stdout


@pytest.mark.fault("fault", "two experiments side by side through the queue (the README's way): both saved, no "
                            "exec ref left", "issue 34: shutdown and concurrency")
def test_two_strategies_side_by_side_through_the_queue_then_compare(repo, tmp_path):
    """The README's way to run experiments side by side: queued (`dvc exp run --queue`), then run by the queue,
    one at a time, each in its own copy of the repository (`dvc exp run --run-all -j 1`), with MLFLOW_TRACKING_URI
    set to one absolute store as the README says; then compared with `deca compare` from DVC and from MLflow.
    Two `dvc exp run` in the one workspace at once would share it (the last test). Queued, both are saved, no exec
    ref is left and the workspace is not touched."""
    repo.commit("baseline")
    # the workspace experiments of the tests above leave refs/exps/exec/EXEC_HEAD (DVC does after any
    # workspace run); the README's clean-up for it, then the queue must leave none
    repo.run("git", "update-ref", "-d", "refs/exps/exec/EXEC_HEAD")
    repo.dvc("exp", "run", "--queue", "-n", "joint", "-S", "train.strategy=fully_joint", *QUICK)
    repo.dvc("exp", "run", "--queue", "-n", "squad-first", "-S", "train.strategy=anti_curriculum_squad",
             "-S", "train.phase_iterations=3", *QUICK)
    store = {**repo.env, "MLFLOW_TRACKING_URI": f"sqlite:///{repo.path / 'mlflow.db'}"}
    run = subprocess.run([str(BIN / "dvc"), "exp", "run", "--run-all", "-j", "1"], cwd=repo.path, env=store,
                         capture_output=True, text=True, timeout=TIMEOUT)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert repo.run("git", "for-each-ref", "refs/exps/exec").stdout == ""
    assert repo.run("git", "status", "--porcelain").stdout == ""  # the workspace was not touched
    out = tmp_path / "strategies"
    shown = repo.run(str(BIN / "deca"), "compare", "--dvc", "--exps", "joint", "squad-first", "--out", str(out))
    table = shown.stdout
    assert "decaScore" in table and "SQuAD" in table and "MWSC" in table
    rows = {line.split()[0]: line for line in table.splitlines() if line.startswith(("joint", "squad-first"))}
    assert "fully_joint" in rows["joint"] and "anti_curriculum_squad" in rows["squad-first"]
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["label"] for r in data["rows"]] == ["joint", "squad-first"]
    assert all(len(r["scores"]) == 10 and r["decascore"] == pytest.approx(sum(r["scores"].values()))
               for r in data["rows"])
    assert out.with_suffix(".md").read_text().count("|") > 20 and out.with_suffix(".png").stat().st_size > 0
    # the same runs, from MLflow: the queue's copies logged into the one store
    mlflow_rows = repo.run(str(BIN / "deca"), "compare", "--mlflow", "--json")
    labels = [r["strategy"] for r in json.loads(mlflow_rows.stdout)["rows"]]
    assert {"fully_joint", "anti_curriculum_squad"} <= set(labels)


def _exp_row(repo: Repo, name: str) -> dict:
    rows = csv.DictReader(repo.dvc("exp", "show", "--csv", "--no-pager").stdout.splitlines())
    return next(r for r in rows if r["Experiment"] == name)


def test_an_experiment_goes_from_one_clone_to_the_other(repo, clone):
    """`dvc exp push` (its git ref to the hub, its outputs to the DVC remote), then `dvc exp pull` in the
    other clone: `dvc exp show` lists it with the same decaScore, and `dvc exp apply` gives its params,
    metrics and outputs, with nothing left to rerun."""
    if "joint" not in repo.dvc("exp", "list", "--name-only").stdout.split():  # the test above was deselected
        repo.commit("baseline")
        repo.dvc("exp", "run", "-n", "joint", "-S", "train.strategy=fully_joint", *QUICK)
    repo.run("git", "push", "-q", "hub", "HEAD")  # the experiment's baseline commit, as a team shares it
    repo.dvc("exp", "push", "hub", "joint")
    clone.run("git", "pull", "-q")
    assert "joint" in clone.dvc("exp", "list", "origin", "--name-only").stdout.split()
    clone.dvc("exp", "pull", "origin", "joint")
    theirs, ours = _exp_row(clone, "joint"), _exp_row(repo, "joint")
    assert theirs["decascore"] and theirs["decascore"] == ours["decascore"]
    assert theirs["train.strategy"] == "fully_joint"
    clone.dvc("exp", "apply", "joint")
    metrics = json.loads((clone.path / "eval" / "metrics.json").read_text())
    assert metrics["decascore"] == pytest.approx(float(ours["decascore"]))
    assert yaml.safe_load((clone.path / "params.yaml").read_text())["train"]["iterations"] == 6
    assert "up to date" in clone.dvc("status").stdout  # every output of the experiment came from the remote


@pytest.mark.fault("fault", "two dvc exp run at once in one workspace: the first is saved, no exec ref left",
                   "issue 34: shutdown and concurrency")
@pytest.mark.xfail(strict=True, reason="DVC's own: the second run's clean-up removes the first one's "
                                       "refs/exps/exec/EXEC_BASELINE (README: run experiments side by side "
                                       "through the queue)")
def test_two_workspace_experiments_at_once_leave_the_first_saved(repo):
    """Issue 34: two `dvc exp run` at once in the one workspace. DVC's lock refuses the second (fine); the first
    must still run with its own params, be saved and leave no exec ref. Known not handled (the README's
    workaround is the queue, tested above with two strategies): the first fails after its stages ran, unsaved."""
    import time

    repo.commit("before two experiments at once")
    log = repo.path.parent / f"{repo.path.name}-at-once-a.log"  # a file, not a pipe nobody reads meanwhile
    with open(log, "w") as out:
        first = subprocess.Popen([str(BIN / "dvc"), "exp", "run", "-n", "at-once-a", "-S", "train.seed=3", *QUICK],
                                 cwd=repo.path, env=repo.env, stdout=out, stderr=subprocess.STDOUT)
    running = repo.path / ".dvc" / "tmp" / "exps" / "run" / "workspace" / "workspace.json"
    deadline = time.monotonic() + 300
    while not running.exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    if first.poll() is not None or not running.exists():  # not the case this test is about: say so, not xfail
        first.wait(timeout=TIMEOUT)
        pytest.skip("the first experiment was not running in the workspace when the second could start")
    second = repo.dvc("exp", "run", "-n", "at-once-b", "-S", "train.seed=4", *QUICK, check=False)
    first.wait(timeout=TIMEOUT)
    out = log.read_text(encoding="utf-8", errors="replace")
    try:
        assert second.returncode != 0, second.stdout[-2000:]
        rows = {r["Experiment"]: r for r in csv.DictReader(repo.dvc("exp", "show", "--csv", "--no-pager").stdout
                                                            .splitlines())}
        assert first.returncode == 0, out[-3000:]
        assert rows.get("at-once-a", {}).get("train.seed") == "3", sorted(rows)
        assert repo.run("git", "for-each-ref", "refs/exps/exec").stdout == ""
    finally:  # whatever happened, leave the workspace clean
        repo.run("git", "checkout", "--", "params.yaml")
        for ref in repo.run("git", "for-each-ref", "--format=%(refname)", "refs/exps/exec").stdout.split():
            repo.run("git", "update-ref", "-d", ref)
