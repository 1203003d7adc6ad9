"""dvc.yaml: resolves, is up to date with the registry and the code, and every stage names real things."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from infra import codedeps, stages
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def index():
    """DVC's view of the pipeline: every stage with its foreach and interpolation resolved."""
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        return {s.addressing: s for s in repo.index.stages}


@pytest.fixture(scope="module")
def params():
    return yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))


def test_generated_parts_are_up_to_date():
    proc = subprocess.run([str(ROOT / ".venv/bin/python"), "-m", "infra.stages", "--check"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_stages_are_the_declared_pipeline(index):
    tables = stages.current()
    from deca.checks import load_params
    from deca.registry import get_task, resolve_tasks

    names = resolve_tasks(load_params(ROOT / "params.yaml").data.tasks)
    assert [e["name"] for e in tables["tasks"].values()] == names
    assert all(get_task(e["name"]).key == key for key, e in tables["tasks"].items())
    expected = ({f"download@{c}" for c in tables["corpora"]} | {f"prepare@{k}" for k in tables["tasks"]}
                | {"validate", "vocab", "contamination", "train", "evaluate", "report"})
    assert set(index) == expected
    assert "prepare@sst" in index and "prepare@woz_en" in index  # `dvc repro prepare@sst` reruns one corpus


def test_every_command_is_a_deca_subcommand(index):
    from deca.cli import COMMANDS

    for name, stage in index.items():
        words = stage.cmd.split()
        assert words[0] == "deca" and words[1] in COMMANDS, f"{name}: {stage.cmd}"


def outs_of(index) -> set[Path]:
    return {Path(o.def_path) for s in index.values() for o in s.outs}


def test_every_dependency_exists_or_is_produced(index):
    produced = outs_of(index)
    for name, stage in index.items():
        for dep in stage.deps:
            p = Path(dep.def_path)
            made = any(p == o or o.is_relative_to(p) or p.is_relative_to(o) for o in produced)
            assert made or (ROOT / p).exists(), f"{name}: dependency {p} neither exists nor is produced by a stage"


def test_code_dependencies_are_exactly_what_the_commands_import(index):
    tables = stages.current()
    expected = stages.code_deps(tables)
    for name, stage in index.items():
        group = name.split("@")[0]
        declared = {d.def_path for d in stage.deps if d.def_path.endswith(".py")}
        want = set(expected[group])
        if group in ("download", "prepare"):
            item = tables["corpora" if group == "download" else "tasks"][name.split("@")[1]]
            want.add(f"deca/tasks/{item['module']}")
        assert declared == want, f"{name}: declared {sorted(declared ^ want)} differ from the imports"


@pytest.mark.parametrize("stage, module", [("evaluate", "infer/serve/examples.py"), ("train", "eval/sources.py"),
                                           ("evaluate", "train/driver.py"), ("train", "infer/predict.py")])
def test_a_stage_does_not_depend_on_code_it_does_not_run(index, stage, module):
    """Editing the demo page's examples does not rerun evaluation, nor Figure 3's summaries training."""
    declared = {d.def_path for d in index[stage].deps}
    assert declared and module not in declared


def upstream(index, name: str) -> set[str]:
    """The stages `name` depends on, directly or not (a dependency inside, or holding, another stage's output)."""
    producer = {Path(o.def_path): s for s, stage in index.items() for o in stage.outs}
    found, todo = set(), [name]
    while todo:
        for dep in index[todo.pop()].deps:
            p = Path(dep.def_path)
            for out, stage in producer.items():
                if stage not in found and (p == out or out.is_relative_to(p) or p.is_relative_to(out)):
                    found.add(stage)
                    todo.append(stage)
    return found


def test_params_are_checked_before_any_stage_that_reads_them(index, params):
    """The validate stage (`deca validate`) reads every section and comes before every stage that reads params,
    so that DVC stops there on a bad value (`dvc exp run -S ...`), before any output is touched."""
    validate = index["validate"]
    assert validate.cmd == f"deca validate --dvc-yaml none --stamp {stages.VALIDATED}"
    declared = {p for d in validate.deps if hasattr(d, "params") for p in d.params}
    assert declared == set(params) == set(stages.VALIDATE_PARAMS)
    assert [(o.def_path, o.persist) for o in validate.outs] == [(stages.VALIDATED, True)]  # kept when it fails
    for name, stage in index.items():
        if name != "validate" and any(getattr(d, "params", None) for d in stage.deps):
            assert "validate" in upstream(index, name), f"{name} reads params but does not follow validate"
    for name in [n for n in index if n.startswith(("prepare@", "prepare_"))] + ["train"]:
        assert stages.VALIDATED in {d.def_path for d in index[name].deps}, name


def test_write_adds_the_validate_blocks_to_a_dvc_yaml_without_them(tmp_path):
    import re

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    older = re.sub(r"  # BEGIN validate stage.*?# END validate stage\n\n", "", text, flags=re.S)
    older = re.sub(r" *# BEGIN validated \w+.*?# END validated \w+\n", "", older, flags=re.S)
    assert "validate" not in yaml.safe_load(older)["stages"] and stages.VALIDATED not in older
    (tmp_path / "dvc.yaml").write_text(older, encoding="utf-8")
    args = ["--dvc-yaml", str(tmp_path / "dvc.yaml"), "--params", str(tmp_path / "params.yaml")]
    assert stages.main(["--check", *args]) == 1
    assert stages.main(["--write", *args]) == 0
    assert (tmp_path / "dvc.yaml").read_text(encoding="utf-8") == text


def test_prepare_declares_its_own_task_options_only(index, params):
    for key in stages.current()["tasks"]:
        declared = {p for d in index[f"prepare@{key}"].deps if hasattr(d, "params") for p in d.params}
        options = {p for p in declared if p.startswith("prepare.task_options.")}
        assert options == {f"prepare.task_options.{key}"}
        assert key in params["prepare"]["task_options"]  # DVC fails on a declared param that is missing


def test_every_declared_param_exists(index, params):
    for name, stage in index.items():
        for dep in stage.deps:
            for key in getattr(dep, "params", None) or []:
                node = params
                for part in key.split("."):
                    assert isinstance(node, dict) and part in node, f"{name}: param {key} not in params.yaml"
                    node = node[part]


def test_metrics_and_plots(index, params):
    ev = index["evaluate"]
    assert [m.def_path for m in ev.metrics] == [params["evaluate"]["metrics_path"]]
    plots = {Path(o.def_path).name for o in ev.outs if o.plot}
    assert plots == {"per_task.png", "figure3.png", "loss.png", "validation.png"}  # images: `dvc plots show` works offline
    assert all(not o.use_cache for o in ev.metrics)


def test_code_closure_follows_function_level_and_relative_imports(tmp_path):
    pkg = tmp_path / "deca"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text('"""docstring only."""\n')
    (pkg / "sub" / "__init__.py").write_text("X = 1\n")
    (pkg / "a.py").write_text("import os\nfrom . import b\n\ndef f():\n    from deca.sub import c\n")
    (pkg / "b.py").write_text("import numpy\n")
    (pkg / "sub" / "c.py").write_text("from ..b import thing\n")
    (pkg / "unused.py").write_text("")
    got = codedeps.closure(["deca.a"], root=tmp_path)
    assert got == ["deca/a.py", "deca/b.py", "deca/sub/__init__.py", "deca/sub/c.py"]
    assert codedeps.closure(["deca.a"], exclude=["deca.sub.c"], root=tmp_path) == ["deca/a.py", "deca/b.py",
                                                                                   "deca/sub/__init__.py"]


def test_check_fails_when_a_stage_lists_stale_code(tmp_path):
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    text = (ROOT / "dvc.yaml").read_text(encoding="utf-8")
    stale = text.replace("        - pipelines/download.py\n", "", 1)
    assert stale != text
    (tmp_path / "dvc.yaml").write_text(stale, encoding="utf-8")
    args = ["--dvc-yaml", str(tmp_path / "dvc.yaml"), "--params", str(tmp_path / "params.yaml")]
    assert stages.main(["--check", *args]) == 1
    assert stages.main(["--write", *args]) == 0
    assert (tmp_path / "dvc.yaml").read_text(encoding="utf-8") == text


def test_a_custom_task_gets_its_own_prepare_stage(tmp_path, capsys):
    """A task declared under custom_tasks in params.yaml: `--write` adds prepare_<name> on its files and params."""
    from dvc.repo import Repo

    from deca.config import Params
    from deca.custom_tasks import declare
    from deca.registry import all_tasks

    custom = {"minqa": {"metric": "nf1", "fields": {"context": "passage"},
                        "files": {"train": "tests/fixtures/custom/qa.train.jsonl",
                                  "validation": "tests/fixtures/custom/qa.validation.jsonl"}}}
    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**raw, "custom_tasks": custom}), encoding="utf-8")
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    args = ["--dvc-yaml", str(tmp_path / "dvc.yaml"), "--params", str(tmp_path / "params.yaml")]
    try:
        assert stages.main(["--check", *args]) == 1
        capsys.readouterr()
        assert stages.main(["--write", *args]) == 0
        registered = len(all_tasks())  # the module tasks and minqa
        assert f"{registered} tasks (1 custom), " in capsys.readouterr().out
        assert stages.main(["--check", *args]) == 0
        assert f"up to date ({registered} tasks (1 custom), " in capsys.readouterr().out
    finally:
        declare(Params())  # the default params: no custom task stays registered
    Repo.init(str(tmp_path), no_scm=True)
    with Repo(str(tmp_path)) as repo:
        index = {s.name: s for s in repo.index.stages}
    stage = index["prepare_minqa"]
    assert stage.cmd == "deca prepare --tasks minqa --out data/processed"
    deps = [d.def_path for d in stage.deps]
    assert deps[:2] == list(custom["minqa"]["files"].values())
    assert "deca/custom_tasks.py" in deps and stages.VALIDATED in deps
    assert [o.def_path for o in stage.outs] == ["data/processed/minqa"]
    params = {k for d in stage.deps if hasattr(d, "params") for k in (d.params or [])}
    assert "custom_tasks.minqa" in params and "prepare.task_options.minqa" not in params
    assert "custom_tasks" in {k for d in index["evaluate"].deps if hasattr(d, "params") for k in (d.params or [])}


def test_the_task_count_is_every_selected_task():
    tables = {"tasks": {"sst": {}, "woz_en": {}}, "custom": {"minqa": []}, "corpora": {"sst": {}, "woz": {}}}
    assert stages.counts(tables) == "3 tasks (1 custom), 2 corpora"
    assert stages.counts({**tables, "custom": {}}) == "2 tasks, 2 corpora"


def test_the_tables_name_the_module_that_registered_each_task():
    from deca.registry import get_task

    table = stages.entries(ROOT / "params.yaml")["tasks"]
    assert table["sst"]["module"] == table["sst_happy_angry"]["module"] == "sst.py"  # a variant: its base's
    assert all(e["module"] == get_task(e["name"]).module.split(".")[-1] + ".py" for e in table.values())
