"""A copy of the repository as a user's git + DVC workspace, for the tests that run the DVC pipeline
(tests/infra/test_dvc_repro.py: the pipeline itself; tests/infra/test_dvc_share.py: sharing it through a DVC
remote, a clone and the experiment queue; tests/infra/test_custom_task_pipeline.py). Each test module
reproduces its own workspace once (`reproduced`), so that two pytest workers run two of them at once."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import ROOT

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


def reproduced(tmp_path_factory, name: str, params: dict | None = None) -> Repo:
    """A fresh copy of the repository with a DVC remote (a local directory, set by infra/dvc/remote.sh, part of the
    first commit), `params` written into params.yaml (and dvc.yaml's generated task list with them), committed,
    then `dvc repro` of everything (as `make run`); `repo.first` is that run, `repo.store` the remote."""
    path = tmp_path_factory.mktemp(name)
    copy_worktree(path)
    repo = Repo(path)
    repo.run("git", "init", "-q")
    repo.store = tmp_path_factory.mktemp(f"{name}-remote")
    repo.run("bash", "infra/dvc/remote.sh", str(repo.store))
    if params:
        repo.set_params(params)
        repo.run(str(BIN / "python"), "-m", "infra.stages", "--write")
    repo.commit("a fresh clone")
    repo.first = repo.dvc("repro")
    return repo
