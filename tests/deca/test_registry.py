"""The task registry (deca/registry.py): resolving names and globs, and the errors for those that match nothing."""
import subprocess
import sys

import pytest

from deca.cli import main
from deca.errors import DecaError, UnknownName
from deca.registry import get_task, resolve_tasks
from tests.conftest import ROOT


def test_a_pattern_that_matches_nothing_is_an_unknown_name():
    with pytest.raises(UnknownName, match=r"task pattern 'zzz\*' matches no task; `deca ls` lists them"):
        resolve_tasks("zzz*")


def test_a_near_miss_pattern_suggests_the_family():
    with pytest.raises(UnknownName, match=r"did you mean mrqa\.\*"):
        resolve_tasks(["mrq.*"])


def test_an_unknown_name_suggests_it_in_another_case():
    with pytest.raises(UnknownName, match=r"unknown task 'SST' \(did you mean sst"):
        get_task("SST")


def test_unknown_names_are_project_errors_and_key_errors():
    with pytest.raises(DecaError):
        resolve_tasks("zzz*")
    with pytest.raises(KeyError):
        resolve_tasks("nosuchtask")


def test_deca_ls_of_a_pattern_matching_nothing_is_one_line(capsys):
    assert main(["ls", "zzz*"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.strip().splitlines() == ["error: task pattern 'zzz*' matches no task; `deca ls` lists them"]


def test_deca_ls_in_a_process_has_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "deca.cli", "ls", "zzz*", "SST"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_deca_ls_suggests_the_lowercase_name(capsys):
    assert main(["ls", "SST"]) == 1
    assert "did you mean sst" in capsys.readouterr().err


def test_each_task_records_the_module_that_registered_it():
    from deca.registry import all_tasks

    modules = {name: t.module for name, t in all_tasks().items() if t.group != "custom"}
    assert modules["squad"] == "deca.tasks.squad" and modules["mrqa.squad"] == "deca.tasks.mrqa"
    assert modules["sst.happy_angry"] == "deca.tasks.sst"
    assert modules["yelp.happy_angry"] == "deca.tasks.uci_sentiment"  # a helper registers it for its base's module
    assert all(m.startswith("deca.tasks.") and not m.rpartition(".")[2].startswith("_") for m in modules.values())


def test_register_sets_the_module_from_the_caller_or_as_given(monkeypatch):
    from deca import registry
    from deca.registry import Task, register

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry.all_tasks()))

    def task(name):
        return Task(name=name, description="", metric="em", sources=(), splits={}, read=lambda *a: iter(()))

    assert register(task("t1")).module == __name__
    assert register(task("t2"), module="deca.tasks.x").module == "deca.tasks.x"
    registered = register(task("t3"))
    assert register(registered) is registered  # registering the same task again is harmless
    with pytest.raises(ValueError, match="registered twice"):
        register(task("t1"))
