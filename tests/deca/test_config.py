import pytest

from deca.config import Params, load_params
from deca.errors import ConfigError


def test_unknown_key_is_named(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("train:\n  iterations: 5\n  itrations: 6\n")
    with pytest.raises(ConfigError, match="'itrations'"):
        load_params(p)


def test_unknown_section_is_named(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("trian: {}\n")
    with pytest.raises(ConfigError, match="'trian'"):
        load_params(p)


def test_types_are_checked(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("train:\n  iterations: many\n")
    with pytest.raises(ConfigError, match="train.iterations: expected an integer"):
        load_params(p)


def test_values_and_overrides(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("train:\n  lr: 1\n  betas: [0.8, 0.9]\n")
    params = load_params(p, overrides={"model.dimension": 32})
    assert isinstance(params, Params)
    assert params.train.lr == 1.0 and isinstance(params.train.lr, float)
    assert params.train.betas == [0.8, 0.9]
    assert params.model.dimension == 32


def test_repository_params_load():
    from tests.conftest import ROOT

    load_params(ROOT / "params.yaml")


def test_yaml12_exponent_floats(tmp_path):
    p = tmp_path / "params.yaml"
    p.write_text("train:\n  eps: 1e-09\n  lr: 2.5E-3\n")
    params = load_params(p)
    assert params.train.eps == 1e-9 and params.train.lr == 2.5e-3
