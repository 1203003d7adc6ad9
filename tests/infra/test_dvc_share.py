"""The DVC pipeline shared: a workspace reproduced with three of the paper's tasks (TASKS, as a user who picks tasks
sets data.tasks, the vocabulary's, training's and evaluation's; half the stages of the ten), its outputs and run
cache pushed to a DVC remote (a local directory set by infra/dvc/remote.sh), a git clone that pulls and reruns
nothing and restores a run that only the run cache keeps; two strategies side by side through DVC's queue, compared
with `deca compare`; one of them moved by `dvc exp push/pull`; last, two `dvc exp run` at once in the one workspace
(a known failure of DVC's, a strict xfail: the fault bench's record reports it as not handled). The pipeline itself
is tests/infra/test_dvc_repro.py.
"""
from __future__ import annotations

import csv
import json
import subprocess

import pytest
import yaml

from tests.infra.dvc_repo import BIN, QUICK, TIMEOUT, Repo, ran_stages, reproduced

pytestmark = [pytest.mark.slow, pytest.mark.first]


TASKS = ["squad", "sst", "schema"]
PICKED = {"data": {"tasks": TASKS}, "prepare": {"vocab_tasks": TASKS}, "train": {"tasks": TASKS},
          "evaluate": {"tasks": TASKS}}
SQUAD_OPTION = {"prepare": {"task_options": {"squad": {"max_train_context_tokens": 60}}}}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    """The pipeline of TASKS, reproduced and committed ("first run"); then prepare@squad run alone with
    another option (SQUAD_OPTION), committed, and put back in the next commit: a run that no workspace shows, for a
    clone to restore from the run cache on the remote instead of running it (`repo.cached_squad`: the outputs it
    wrote). Committed because `dvc push --run-cache` leaves out a run's directory outputs that no commit's
    dvc.lock names (DVC 3: a clone then finds the run cache entry but not its files)."""
    repo = reproduced(tmp_path_factory, "shared", PICKED)
    repo.commit("first run")
    repo.set_params(SQUAD_OPTION)
    repo.dvc("repro", "-s", "prepare@squad")
    repo.commit("squad with another option")
    lock = yaml.safe_load((repo.path / "dvc.lock").read_text())
    repo.cached_squad = lock["stages"]["prepare@squad"]["outs"]
    repo.run("git", "checkout", "HEAD~1", "--", "params.yaml", "dvc.lock")
    repo.dvc("checkout")
    repo.commit("squad's option put back")
    assert "up to date" in repo.dvc("status").stdout
    return repo


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


def test_push_then_a_fresh_clone_pulls_and_reruns_nothing(repo, clone):
    assert "pushed" in repo.pushed.stdout and any(p.is_file() for p in (repo.store / "files").rglob("*"))
    assert str(repo.store) in (clone.path / ".dvc" / "config").read_text()  # the remote comes with git
    assert "fetched" in clone.pulled.stdout
    for rel in ("data/vocab.txt", "checkpoints/pipeline/deca_run.json", "eval/predictions/squad.jsonl",
                "eval/report/report.md"):
        assert (clone.path / rel).read_bytes() == (repo.path / rel).read_bytes(), rel
    assert "up to date" in clone.dvc("status").stdout
    assert ran_stages(clone.dvc("repro")) == []
    # The run cache: the option prepare@squad once ran with (the fixture's, then put back) gives back that
    # run's outputs, fetched from the remote, instead of running the stage again.
    clone.set_params(SQUAD_OPTION)
    restored = clone.dvc("repro", "--pull", "-s", "prepare@squad")
    assert ran_stages(restored) == []
    assert "Stage 'prepare@squad' is cached - skipping run" in restored.stdout, restored.stdout[-2000:]
    lock = yaml.safe_load((clone.path / "dvc.lock").read_text())
    assert lock["stages"]["prepare@squad"]["outs"] == repo.cached_squad
    assert "up to date" in clone.dvc("status", "prepare@squad").stdout
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
    # a workspace experiment leaves refs/exps/exec/EXEC_HEAD (DVC does after any workspace run); the README's
    # clean-up for it, where one is left, then the queue must leave none
    if repo.run("git", "for-each-ref", "refs/exps/exec/EXEC_HEAD").stdout:
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
    assert all(len(r["scores"]) == len(TASKS) and r["decascore"] == pytest.approx(sum(r["scores"].values()))
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
