"""Params overlays (infra/overlay.py, infra/params/, infra/beam/): valid, and applied exactly as DVC's -S applies them."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import yaml

from deca.errors import ConfigError
from infra import overlay, params_yaml
from tests.conftest import ROOT

OVERLAYS = sorted((ROOT / "infra" / "params").glob("*.yaml")) + sorted((ROOT / "infra" / "beam").glob("*.yaml"))


@pytest.mark.parametrize("path", OVERLAYS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_overlay_is_valid_and_applies_exactly(path, tmp_path):
    combined, merged = overlay.combine([path], ROOT / "params.yaml")  # raises on any invalid key or option
    params = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", params)
    params_yaml.write(params, combined)
    assert yaml.safe_load(params.read_text(encoding="utf-8")) == merged  # as deca.config reads it
    overlay.validate(yaml.safe_load(params.read_text(encoding="utf-8")), str(params))


@pytest.mark.parametrize("path", OVERLAYS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_printed_set_params_are_what_dvc_applies(path, tmp_path):
    from dvc.utils.hydra import apply_overrides
    from ruamel.yaml import YAML

    combined, merged = overlay.combine([path], ROOT / "params.yaml")
    params = tmp_path / "params.yaml"
    shutil.copy(ROOT / "params.yaml", params)
    apply_overrides(str(params), overlay.overrides(combined))  # what `dvc exp run -S` does with them
    assert YAML(typ="safe").load(params.read_text(encoding="utf-8")) == merged  # read as YAML 1.2, as DVC does


def test_paper_overlay_is_the_papers_setting():
    combined = overlay.load_overlay(ROOT / "infra" / "params" / "paper.yaml")
    m, t = combined["model"], combined["train"]
    assert (m["dimension"], m["ff_hidden"], m["heads"], m["transformer_layers"], m["dropout"]) == (200, 150, 3, 2, 0.2)
    assert (t["lr"], t["warmup"], t["betas"], t["eps"], t["token_budget"]) == (2.5e-3, 800, [0.9, 0.98], 1e-9, 10000)
    assert t["strategy"] == "anti_curriculum_squad" and combined["data"]["tasks"] == ["decanlp"]
    assert combined["prepare"]["vocab_size"] == 50000 and m["max_generative_vocab"] == 50000


def test_overlays_combine_later_wins():
    combined, merged = overlay.combine([ROOT / "infra/params/paper.yaml", ROOT / "infra/params/gpu.yaml",
                                        ROOT / "infra/beam/flink.yaml"], ROOT / "params.yaml")
    assert merged["train"]["strategy"] == "anti_curriculum_squad" and merged["train"]["use_gpu"] is True
    assert merged["prepare"]["runner"] == "FlinkRunner" and merged["prepare"]["vocab_size"] == 50000


@pytest.mark.parametrize("value", ["plain", "with 'quotes' and \\backslash", "a,b=c [x] {y}", "", None, True,
                                   3, 2.5e-3, [1, "two", None], {"k": [1, 2], "s": "x y"}])
def test_hydra_values_round_trip(value, tmp_path):
    from dvc.utils.hydra import apply_overrides

    params = tmp_path / "params.yaml"
    params.write_text("a:\n  b: 0\n", encoding="utf-8")
    apply_overrides(str(params), [f"++a.b={overlay.hydra_value(value)}", f"++a.new.deep={overlay.hydra_value(value)}"])
    loaded = yaml.safe_load(params.read_text(encoding="utf-8"))
    assert loaded["a"]["b"] == value and loaded["a"]["new"]["deep"] == value


def test_empty_task_options_stay_a_leaf():
    assert overlay.overrides({"prepare": {"task_options": {"sst": {}}}}) == ["++prepare.task_options.sst={}"]


@pytest.mark.parametrize("bad,message", [
    ({"train": {"iteratons": 5}}, "iteratons"),
    ({"train": {"iterations": "many"}}, "expected an integer"),
    ({"prepare": {"task_options": {"squad": {"max_context": 3}}}}, "max_context"),
    ({"prepare": {"task_options": {"nosuchtask": {}}}}, "nosuchtask"),
    ({"nosection": {"x": 1}}, "nosection"),
])
def test_invalid_overlays_fail_before_anything_runs(bad, message, tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad), encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        overlay.combine([path], ROOT / "params.yaml")
    assert overlay.main([str(path), "--params", str(ROOT / "params.yaml")]) == 1


def test_load_overlay_names_a_broken_file(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("train: [unclosed\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="broken.yaml: not valid YAML"):
        overlay.load_overlay(path)
    with pytest.raises(ConfigError, match="no such overlay"):
        overlay.load_overlay(tmp_path / "missing.yaml")


def test_write_applies_in_place_and_regenerates_the_task_tables(tmp_path):
    from infra import stages

    for name in ("params.yaml", "dvc.yaml"):
        shutil.copy(ROOT / name, tmp_path / name)
    text_before = (tmp_path / "params.yaml").read_text(encoding="utf-8")
    assert overlay.main(["--write", str(ROOT / "infra/params/shared_mirror.yaml"),
                         "--params", str(tmp_path / "params.yaml")]) == 0
    params = yaml.safe_load((tmp_path / "params.yaml").read_text(encoding="utf-8"))
    assert params["data"]["mirror"] == "../shared/corpora"
    assert "# Parameters of every stage" in (tmp_path / "params.yaml").read_text(encoding="utf-8")
    assert text_before != (tmp_path / "params.yaml").read_text(encoding="utf-8")
    tables = stages.current(tmp_path / "dvc.yaml")
    assert [e["name"] for e in tables["tasks"].values()] == ["sst", "srl", "woz.en", "schema", "woz.de"]
    assert set(tables["corpora"]) == {"sst", "srl", "woz", "schema"}
    assert tables["corpora"]["woz"]["tasks"] == "woz.en,woz.de"
    assert stages.main(["--check", "--dvc-yaml", str(tmp_path / "dvc.yaml"),
                        "--params", str(tmp_path / "params.yaml")]) == 0


def test_print_changes_nothing(tmp_path, capsys):
    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    before = (tmp_path / "params.yaml").read_bytes()
    assert overlay.main(["--print", str(ROOT / "infra/params/gpu.yaml"), "--params", str(tmp_path / "params.yaml")]) == 0
    out = capsys.readouterr().out
    assert "-S ++train.num_workers=4" in out and "++train.use_gpu=true" in out
    assert (tmp_path / "params.yaml").read_bytes() == before


def test_an_overlay_alias_bomb_is_refused(tmp_path):
    from infra.overlay import load_overlay
    from tests.deca.test_config import list_bomb

    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(list_bomb())
    with pytest.raises(ConfigError, match=r"bomb\.yaml:\d+: refused: its aliases"):
        load_overlay(bomb)


def test_no_overlay_is_applied_while_a_dvc_command_runs_in_the_workspace(tmp_path, capsys):
    """While `dvc exp run` runs in the workspace (it holds .dvc/tmp/lock, as DVC locks it: zc.lockfile), applying
    an overlay would rewrite the params.yaml the running experiment reads: refused, params.yaml untouched."""
    import zc.lockfile

    shutil.copy(ROOT / "params.yaml", tmp_path / "params.yaml")
    (tmp_path / ".dvc" / "tmp").mkdir(parents=True)
    before = (tmp_path / "params.yaml").read_bytes()
    argv = ["--write", str(ROOT / "infra/params/gpu.yaml"), "--params", str(tmp_path / "params.yaml")]
    held = zc.lockfile.LockFile(str(tmp_path / ".dvc" / "tmp" / "lock"))
    try:
        assert overlay.main(argv) == 1
    finally:
        held.close()
    assert "DVC runs in this repository: a DVC command" in capsys.readouterr().err
    assert (tmp_path / "params.yaml").read_bytes() == before
    # a workspace experiment's own record (DVC releases its lock while a stage's command runs)
    running = tmp_path / ".dvc" / "tmp" / "exps" / "run" / "workspace" / "workspace.json"
    running.parent.mkdir(parents=True)
    running.write_text(json.dumps({"pid": os.getpid()}), encoding="utf-8")
    assert overlay.main(argv) == 1 and (tmp_path / "params.yaml").read_bytes() == before
    assert "`dvc exp run` in the workspace" in capsys.readouterr().err
    running.unlink()
    assert overlay.main(argv) == 0 and (tmp_path / "params.yaml").read_bytes() != before  # nothing runs any more
