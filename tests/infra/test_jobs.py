"""`deca repro --jobs N` (infra/jobs.py) on small real DVC pipelines of shell commands, against `dvc repro` itself:
the same dvc.lock, outputs, run-cache and `dvc status`; stages that run at once, a stage that needs every core
alone; a failed, killed or interrupted stage that stops its dependents and leaves no output half-written."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

BIN = ROOT / ".venv" / "bin"
TIMEOUT = 120

# Three stages of a foreach and one that joins them (a metric uncached, as eval's are).
FOREACH = """\
stages:
  gen:
    foreach: ${items}
    do:
      cmd: mkdir -p out/${item} && echo "${item} $(cat src/seed.txt)" > out/${item}/data.txt
      deps:
        - src/seed.txt
      outs:
        - out/${item}
  join:
    cmd: cat out/x/data.txt out/y/data.txt out/z/data.txt > joined.txt && echo "${n}" > metrics.json
    deps: [out/x, out/y, out/z]
    params: [n]
    outs: [joined.txt]
    metrics:
      - metrics.json:
          cache: false
"""


def env() -> dict[str, str]:
    return {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(ROOT),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def sh(path: Path, *cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), cwd=path, env=env(), capture_output=True, text=True, timeout=TIMEOUT)
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def project(path: Path, dvc_yaml: str, params: str = "n: 3\nitems: [x, y, z]\n") -> Path:
    """A git repository with DVC, `dvc_yaml`, params.yaml and src/seed.txt, committed."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "src").mkdir(exist_ok=True)
    (path / "src" / "seed.txt").write_text("seed\n")
    (path / "dvc.yaml").write_text(dvc_yaml)
    (path / "params.yaml").write_text(params)
    sh(path, "git", "init", "-q")
    sh(path, str(BIN / "dvc"), "init", "-q")
    sh(path, "git", "add", "-A")
    sh(path, "git", "commit", "-q", "-m", "a pipeline")
    return path


def deca_repro(path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh(path, str(BIN / "python"), "-m", "deca.cli", "repro", *args, check=check)


def dvc(path: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    return sh(path, str(BIN / "dvc"), *args, check=check)


def state(path: Path) -> dict:
    """What a repro leaves: dvc.lock (parsed: its stage order is the order they finished), every file outside
    .git and .dvc (a .gitignore's lines as a set: DVC adds an output's line when the stage is recorded, so on a
    first run they come in the order the stages finished), and the run-cache's entries."""
    files = {p.relative_to(path).as_posix(): sorted(p.read_text().splitlines()) if p.name == ".gitignore"
             else p.read_bytes() for p in sorted(path.rglob("*"))
             if p.is_file() and not {".git", ".dvc"} & set(p.relative_to(path).parts) and p.name != "dvc.lock"}
    runs = path / ".dvc" / "cache" / "runs"
    return {"lock": yaml.safe_load((path / "dvc.lock").read_text()), "files": files,
            "runs": sorted(p.relative_to(runs).as_posix() for p in runs.rglob("*") if p.is_file())}


def up_to_date(path: Path) -> bool:
    return "up to date" in dvc(path, "status").stdout


@pytest.mark.slow
def test_a_parallel_repro_records_what_dvc_repro_records(tmp_path):
    serial, parallel = project(tmp_path / "serial", FOREACH), project(tmp_path / "parallel", FOREACH)
    dvc(serial, "repro")
    out = deca_repro(parallel, "--jobs", "2").stdout
    assert "done: 4 ran" in out and "[4/4] join: ran in" in out
    assert state(parallel) == state(serial)
    assert up_to_date(parallel) and up_to_date(serial)
    assert "done: 0 ran, 0 restored from the run-cache, 4 unchanged" in deca_repro(parallel, "--jobs", "2").stdout
    # another seed, then the first one back: both runs are in the run-cache, from which both restore
    for path in (serial, parallel):
        (path / "src" / "seed.txt").write_text("other\n")
    dvc(serial, "repro")
    deca_repro(parallel)
    assert state(parallel) == state(serial)
    for path in (serial, parallel):
        (path / "src" / "seed.txt").write_text("seed\n")
    assert dvc(serial, "repro").stdout.count("is cached - skipping run") == 4
    assert "4 restored from the run-cache" in deca_repro(parallel, "--jobs", "2").stdout
    assert state(parallel) == state(serial) and up_to_date(parallel)


# Two stages that each wait for the other to have started (one at a time they time out and fail), and one
# that takes every core and logs when it ran, beside one that logs when it ran.
AT_ONCE = """\
stages:
  left:
    cmd: touch left.started && for i in $(seq 200); do [ -e right.started ] && break; sleep 0.05; done
      && [ -e right.started ] && echo both > left.txt
    outs: [left.txt, left.started]
  right:
    cmd: touch right.started && for i in $(seq 200); do [ -e left.started ] && break; sleep 0.05; done
      && [ -e left.started ] && echo both > right.txt
    outs: [right.txt, right.started]
  big:
    cmd: date +%s.%N > big.txt && sleep 1 && date +%s.%N >> big.txt
    meta:
      cores: [2, 1.0]
    deps: [left.txt, right.txt]
    outs: [big.txt]
  small:
    cmd: date +%s.%N > small.txt && sleep 1 && date +%s.%N >> small.txt
    deps: [left.txt, right.txt]
    outs: [small.txt]
"""


@pytest.mark.slow
def test_independent_stages_run_at_once_and_a_stage_of_every_core_alone(tmp_path):
    path = project(tmp_path / "p", AT_ONCE)
    deca_repro(path, "--jobs", "2")
    assert (path / "left.txt").read_text() == (path / "right.txt").read_text() == "both\n"
    big, small = ([float(t) for t in (path / f).read_text().split()] for f in ("big.txt", "small.txt"))
    assert big[1] <= small[0] or small[1] <= big[0], (big, small)  # one after the other
    assert up_to_date(path)


# `bad` writes a partial output, then fails (fail: 1) or is killed (fail: 9); `after` depends on it, `other` not.
FAILING = """\
stages:
  first:
    cmd: echo first > first.txt
    outs: [first.txt]
  bad:
    cmd: mkdir -p bad && echo "${fail} partial" > bad/part.txt && if [ ${fail} = 1 ]; then echo no way >&2; exit 3;
      elif [ ${fail} = 9 ]; then kill -9 $$; fi; echo complete > bad/whole.txt
    deps: [first.txt]
    outs: [bad]
  after:
    cmd: cat bad/whole.txt > after.txt
    deps: [bad]
    outs: [after.txt]
  other:
    cmd: sleep 1 && cat src/seed.txt > other.txt
    deps: [src/seed.txt]
    outs: [other.txt]
"""


@pytest.mark.slow
@pytest.mark.parametrize("fail, why", [(1, "exit status 3"), (9, "killed by signal 9")])
def test_a_failed_stage_stops_its_dependents_and_leaves_its_last_outputs(tmp_path, fail, why):
    path = project(tmp_path / "p", FAILING, params="fail: 0\n")
    deca_repro(path, "--jobs", "2")
    good_lock = yaml.safe_load((path / "dvc.lock").read_text())
    (path / "params.yaml").write_text(f"fail: {fail}\n")
    (path / "src" / "seed.txt").write_text("changed\n")
    proc = deca_repro(path, "--jobs", "2", check=False)
    assert proc.returncode == 1
    assert f"error: stage bad failed ({why}; its output: .dvc/tmp/repro/bad.log" in proc.stderr
    assert "not run (they depend on it): after" in proc.stderr and "after: not run: it depends on bad" in proc.stdout
    if fail == 1:
        assert "no way" in proc.stderr  # the failed stage's last lines
    # the failed stage's outputs are those of its last recorded run, nothing of the failed one
    assert sorted(p.name for p in (path / "bad").iterdir()) == ["part.txt", "whole.txt"]
    assert (path / "bad" / "part.txt").read_text() == "0 partial\n"
    lock = yaml.safe_load((path / "dvc.lock").read_text())
    assert lock["stages"]["bad"] == good_lock["stages"]["bad"] and lock["stages"]["after"] == good_lock["stages"]["after"]
    assert (path / "other.txt").read_text() == "changed\n" and lock["stages"]["other"] != good_lock["stages"]["other"]
    status = dvc(path, "status").stdout
    assert "bad:" in status and "other:" not in status and "first:" not in status


def test_a_stage_that_fails_on_its_first_run_leaves_no_output(tmp_path):
    path = project(tmp_path / "p", FAILING, params="fail: 9\n")
    proc = deca_repro(path, "--jobs", "2", check=False)
    assert proc.returncode == 1 and "killed by signal 9" in proc.stderr
    assert not (path / "bad").exists() and not (path / "after.txt").exists() and (path / "other.txt").exists()
    status = dvc(path, "status").stdout
    assert "bad:" in status and "after:" in status and "other:" not in status


LONG = """\
stages:
  long:
    cmd: mkdir -p long && echo partial > long/part.txt && touch long.started && sleep 60 && echo done > long/end.txt
    outs: [long]
  quick:
    cmd: echo quick > quick.txt
    outs: [quick.txt]
"""


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_ctrl_c_stops_the_running_stages_and_records_none_of_them(tmp_path, sig, code):
    path = project(tmp_path / "p", LONG)
    proc = subprocess.Popen([str(BIN / "python"), "-m", "deca.cli", "repro", "--jobs", "2"], cwd=path, env=env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (path / "long.started").exists() and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        started = time.monotonic()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        proc.kill()
    assert proc.returncode == code and "interrupted" in err, out + err
    assert time.monotonic() - started < 20  # the sleep was stopped, not waited for
    assert not (path / "long").exists()
    lock = yaml.safe_load((path / "dvc.lock").read_text()) if (path / "dvc.lock").exists() else {"stages": {}}
    assert "long" not in lock["stages"]
    assert "long:" in dvc(path, "status").stdout


@pytest.mark.slow
def test_a_stage_takes_the_cores_its_meta_names(tmp_path):
    from types import SimpleNamespace

    from infra.jobs_run import stage_cores

    (tmp_path / "params.yaml").write_text("train:\n  num_workers: [1, 3]\n  cpus_per_worker: 0.5\n", encoding="utf-8")

    def cores(meta, jobs=4):
        return stage_cores(SimpleNamespace(meta=meta, addressing="train", repo=SimpleNamespace(root_dir=tmp_path)), jobs)

    assert cores(None) == cores({}) == 1 and cores({"cores": 3}) == 3 and cores({"cores": [2, 1.5]}) == 3
    assert cores({"cores": [8, 1.0]}) == 4  # at most --jobs: it runs alone
    assert cores({"cores": [[1, 3], 1.0]}) == 3  # an elastic train.num_workers [min, max]: its max
    assert cores({"cores": ["train.num_workers", "train.cpus_per_worker"]}) == 2  # params.yaml keys: 3 x 0.5
    for bad in ("many", ["train.num_workers", "train.nothing"]):
        with pytest.raises(ValueError, match=r"dvc.yaml: stage train: meta.cores must be a number, a params.yaml key"):
            cores({"cores": bad})


@pytest.mark.slow
def test_options_of_dvc_repro_go_to_it_alone(tmp_path):
    path = project(tmp_path / "p", FOREACH)
    proc = deca_repro(path, "--jobs", "2", "--force", check=False)
    assert proc.returncode == 2 and "--force: not with --jobs 2" in proc.stderr
    assert deca_repro(path, "--jobs", "0", check=False).returncode == 2
    forced = deca_repro(path, "--jobs", "1", "--force", "join")  # `dvc repro --force join` itself
    assert "[4/4] join: ran in" in forced.stdout and up_to_date(path)


@pytest.mark.slow
def test_the_project_s_own_stages_in_parallel_as_dvc_repro_leaves_them(tmp_path):
    """The pipeline's validate, download and prepare stages of four tasks (Beam, the bundled corpora) on two copies
    of the repository: `deca repro --jobs 2` leaves dvc.lock, the prepared data and the run-cache as `dvc repro`."""
    from tests.infra.dvc_repo import copy_worktree

    targets = ["prepare@sst", "prepare@sst_happy_angry", "prepare@woz_en", "prepare@woz_de"]
    made = {}
    for name in ("serial", "parallel"):
        path = tmp_path / name
        path.mkdir()
        copy_worktree(path)
        sh(path, "git", "init", "-q")
        sh(path, "git", "add", "-A")
        sh(path, "git", "commit", "-q", "-m", "a clone")
        made[name] = path
    dvc(made["serial"], "repro", *targets)
    out = deca_repro(made["parallel"], "--jobs", "2", *targets).stdout
    assert "done: 7 ran" in out, out
    serial, parallel = (yaml.safe_load((made[n] / "dvc.lock").read_text())["stages"] for n in ("serial", "parallel"))
    ran = {"validate", "download@sst", "download@woz", *targets}
    assert {k: parallel[k] for k in ran} == {k: serial[k] for k in ran}
    outs = sorted(o["path"] for k in ran for o in serial[k]["outs"])  # data/raw/.verified.json, a cache beside
    data = {n: {p.relative_to(made[n]).as_posix(): p.read_bytes() for out in outs  # them, holds mtimes: not compared
                for p in sorted([made[n] / out, *(made[n] / out).rglob("*")]) if p.is_file()} for n in made}
    assert data["parallel"] == data["serial"] and any("/sst/train/" in k for k in data["serial"])
    assert state(made["parallel"])["runs"] == state(made["serial"])["runs"]
    assert "done: 0 ran, 0 restored from the run-cache, 7 unchanged" in deca_repro(made["parallel"], *targets).stdout
