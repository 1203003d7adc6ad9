"""`deca validate` runs every check that `deca prepare`, `deca train` and `deca evaluate` run on params before
they start (deca.checks.check_params), prints each problem once after where its value came from, writes the
validate stage's output only when the params pass, and inside `dvc exp run` puts back a params.yaml whose
experiment values it refused."""
import os
import re
import shutil
import subprocess

import pytest

from deca.cli import main
from infra.validate_cli import STAMP_TEXT
from mqan.model import VARIANTS
from mqan.precision import DECODING, TRAINING
from train.data import BUCKETING
from tests.conftest import ROOT


@pytest.mark.parametrize("item, message", [
    ("train.strategy=zigzag", "train.strategy: unknown strategy 'zigzag'; choose one of fully_joint, "),
    ("train.tasks=[nosuchtask]", "train.tasks = ['nosuchtask']: unknown task 'nosuchtask'"),
    ("evaluate.tasks=[mrqa.zz*]", "matches no task (did you mean mrqa.*?)"),
    ("prepare.vocab_tasks=[ssst]", "unknown task 'ssst' (did you mean sst"),
    ("prepare.task_options.squad={max_train_context_tokns: 3}", "'max_train_context_tokns'"),
    ("train.strategy=anti_curriculum_squad", "leaves none of the train.iterations = 200"),
    ("model.word_vectors=/nonexistent/glove.txt", "word-vector source not found"),
    ("train.iterations=abc", "train.iterations: expected an integer"),
    ("train.itrations=5", "did you mean 'iterations'"),
    ("evaluate.precision=fp8", f"must be one of {', '.join(DECODING)}"),  # the lists of the code that acts
    ("train.precision=int8", f"must be one of {', '.join(TRAINING)}"),
    ("model.variant=mqn", f"must be one of {', '.join(VARIANTS)} (did you mean 'mqan'?)"),
    ("train.bucketing=exactly", f"must be one of {', '.join(BUCKETING)}"),
    ("train.num_workers=-1", "train.num_workers = -1: must be >= 0"),
    ("train.max_failures=1", "train.max_failures = 1: train.num_workers = 0 (Ray Train's local mode: training in "
                             "this process) cannot restart after a failure"),
])
def test_validate_refuses_what_a_command_would_refuse_once_naming_the_set(item, message, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["validate", "--set", item, "--dvc-yaml", "none"]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert f"--set {item}: " in out and message in out
    assert out.count(message) == 1


def test_an_overlay_value_is_named_by_its_file_and_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    bad = tmp_path / "overlay.yaml"
    bad.write_text("model:\n  dropout: 0.3\ntrain:\n  strategy: zigzag\n", encoding="utf-8")
    assert main(["validate", "--overlay", str(bad), "--dvc-yaml", "none"]) == 1
    assert f"error: {bad}:4: train.strategy: unknown strategy 'zigzag'" in capsys.readouterr().out


def test_a_bad_params_file_is_reported_once(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    params = tmp_path / "params.yaml"
    params.write_text((ROOT / "params.yaml").read_text(encoding="utf-8").replace("  lr: 0.0025 ", "  lr: -1.0   "))
    assert main(["validate", "--params", str(params)]) == 1
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert out.count("train.lr = -1.0: must be > 0") == 1 and f"{params}:" in out
    assert f"dvc.yaml: not checked ({params} does not load)" in out


def test_the_commands_run_the_same_checks(tmp_path, capsys, monkeypatch):
    """`deca prepare` and `deca evaluate` refuse a task name before reading anything, as validate does."""
    monkeypatch.chdir(ROOT)
    assert main(["prepare", "--set", "data.tasks=[nosuchtask]", "--out", str(tmp_path / "out")]) == 1
    assert "--set data.tasks=['nosuchtask']: data.tasks = ['nosuchtask']: unknown task" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert main(["evaluate", "--set", "evaluate.tasks=[nosuchtask]", "--checkpoint", str(tmp_path / "none.pt"),
                 "--out", str(tmp_path / "eval")]) == 1
    assert "evaluate.tasks = ['nosuchtask']: unknown task 'nosuchtask'" in capsys.readouterr().err


def test_the_stamp_is_written_only_for_valid_params_and_never_changes(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    stamp = tmp_path / "params.valid"
    assert main(["validate", "--dvc-yaml", "none", "--set", "train.lr=-1", "--stamp", str(stamp)]) == 1
    assert not stamp.exists()
    assert main(["validate", "--dvc-yaml", "none", "--stamp", str(stamp)]) == 0
    assert stamp.read_text(encoding="utf-8") == STAMP_TEXT
    written = stamp.stat().st_mtime_ns
    assert main(["validate", "--dvc-yaml", "none", "--set", "train.lr=0.001", "--stamp", str(stamp)]) == 0
    assert stamp.stat().st_mtime_ns == written  # untouched: the stages after it see no change


def git(path, *args) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture
def experiment(tmp_path, monkeypatch):
    """A git repository whose params.yaml is the project's, as `dvc exp run` in the workspace runs a stage."""
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "params.yaml")
    git(tmp_path, "commit", "-q", "-m", "baseline")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DVC_EXP_BASELINE_REV", git(tmp_path, "rev-parse", "HEAD").strip())
    monkeypatch.setenv("DVC_ROOT", str(tmp_path))
    return tmp_path


def as_dvc_wrote_it(path, **values) -> None:
    """params.yaml as `dvc exp run -S` leaves it: the values set, the file written again (DVC's own rewrite,
    which also reformats it, is in tests/infra/test_dvc_repro.py)."""
    from deca.config import set_dotted
    from infra.params_yaml import write

    write(path, set_dotted({}, {k.replace("__", "."): v for k, v in values.items()}))


def test_a_refused_experiment_puts_params_yaml_back(experiment, capsys):
    baseline = (experiment / "params.yaml").read_bytes()
    as_dvc_wrote_it(experiment / "params.yaml", train__strategy="zigzag", train__iterations=-5)
    assert (experiment / "params.yaml").read_bytes() != baseline
    assert main(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"params\.yaml:\d+: train\.iterations = -5: must be >= 1", out)
    assert re.search(r"params\.yaml:\d+: train\.strategy: unknown strategy 'zigzag'", out)
    assert "params.yaml: put back as in " in out
    assert (experiment / "params.yaml").read_bytes() == baseline and not (experiment / "params.valid").exists()


def test_other_changes_of_the_experiment_are_kept(experiment, capsys, monkeypatch):
    as_dvc_wrote_it(experiment / "params.yaml", train__strategy="zigzag", train__lr=0.001)
    changed = (experiment / "params.yaml").read_bytes()
    assert main(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"]) == 1
    assert "put back" not in capsys.readouterr().out
    assert (experiment / "params.yaml").read_bytes() == changed  # train.lr was not refused: nothing undone
    monkeypatch.delenv("DVC_EXP_BASELINE_REV")  # not in an experiment (`dvc repro`): the file is the user's
    as_dvc_wrote_it(experiment / "params.yaml", train__lr=0.0025)
    changed = (experiment / "params.yaml").read_bytes()
    assert main(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"]) == 1
    assert (experiment / "params.yaml").read_bytes() == changed
