"""`deca validate` (infra/validate_cli.py): params, overlays and overrides against the config; dvc.yaml
against the code."""
import shutil

from deca.cli import main
from tests.conftest import ROOT


def test_the_repository_is_valid(capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["validate", "--overlay", "infra/params/glove.yaml"]) == 0
    out = capsys.readouterr().out
    assert "params.yaml + infra/params/glove.yaml: valid" in out and "dvc.yaml: up to date" in out


def test_bad_values_and_stale_dvc_yaml_are_reported(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    assert main(["validate", "--set", "train.lr=-1", "--dvc-yaml", "none"]) == 1
    assert "--set train.lr=-1: train.lr = -1.0: must be > 0" in capsys.readouterr().out
    bad = tmp_path / "overlay.yaml"
    bad.write_text("train:\n  itrations: 5\n")
    assert main(["validate", "--overlay", str(bad), "--dvc-yaml", "none"]) == 1
    assert "'itrations'" in capsys.readouterr().out
    stale = tmp_path / "dvc.yaml"
    shutil.copy(ROOT / "dvc.yaml", stale)
    stale.write_text(stale.read_text().replace("      - train/recipe.py\n", ""))
    assert main(["validate", "--dvc-yaml", str(stale)]) == 1
    assert "train/recipe.py" in capsys.readouterr().out


def test_a_params_alias_bomb_is_one_line_within_a_second(tmp_path, capsys):
    import time

    from tests.deca.test_config import mapping_bomb

    bomb = tmp_path / "params.yaml"
    bomb.write_text(mapping_bomb())
    start = time.perf_counter()
    assert main(["validate", "--params", str(bomb), "--dvc-yaml", "none"]) == 1
    assert time.perf_counter() - start < 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"error: {bomb}:") and "refused: its aliases" in out[0]


def test_an_oversized_overlay_is_one_line_and_not_parsed(tmp_path, capsys):
    """`deca validate --overlay BIG` and `python -m infra.overlay BIG` read an overlay as a params file: over
    the size limit it is refused unparsed, in one line naming it (issue 42)."""
    from deca.params_file import MAX_PARAMS_BYTES
    from infra.overlay import main as overlay

    big = tmp_path / "big.yaml"
    big.write_text("train: {iterations: 5}\n" + "# padding\n" * (MAX_PARAMS_BYTES // 10))
    assert main(["validate", "--overlay", str(big), "--dvc-yaml", "none"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 and out[0].startswith(f"error: {big}: refused: 262,163 bytes, over the 262,144"), out
    assert overlay([str(big), "--print"]) == 1
    assert capsys.readouterr().err.startswith(f"error: {big}: refused: 262,163 bytes")
