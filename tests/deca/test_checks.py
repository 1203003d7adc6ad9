"""Every parameter value is checked when params are loaded: key, value, what is allowed, and where it came from."""
import pytest

from deca.checks import RULES, checked_params, load_params
from deca.cli import main
from deca.config import Params
from deca.errors import ConfigError
from mqan.model import VARIANTS
from mqan.precision import DECODING, TRAINING
from train.data import BUCKETING
from train.choices import PLACEMENT_STRATEGIES, allowed_values


@pytest.mark.parametrize("key, value, allowed", [
    ("model.dropout", 1.5, "[0, 1)"), ("model.dimension", 0, "even number"), ("train.lr", -0.1, "> 0"),
    ("train.val_every", -1, ">= 0"), ("train.save_every", -10, ">= 0"), ("train.warmup", -1, ">= 0"),
    ("train.checkpoints_to_keep", -1, ">= 1"), ("prepare.vocab_size", 0, ">= 1"), ("train.ema_decay", 1.0, "[0, 1)"),
    ("train.betas", [0.9], "two numbers"), ("evaluate.batch_size", 0, ">= 1"), ("model.word_dropout", -0.1, "[0, 1)"),
])
def test_a_bad_override_names_key_value_range_and_source(key, value, allowed):
    with pytest.raises(ConfigError) as err:
        load_params("params.yaml", overrides={key: value})
    msg = str(err.value)
    assert f"--set {key}=" in msg and f"{key} = {value!r}" in msg and allowed in msg


def test_a_bad_value_in_the_file_names_its_line(tmp_path):
    path = tmp_path / "params.yaml"
    path.write_text("train:\n  iterations: 10\n  lr: 0.0\nmodel:\n  variant: mqn\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        checked_params(path, choices=allowed_values())  # the model's variants are mqan's: deca is given them
    msg = str(err.value)
    assert f"{path}:3: train.lr = 0.0: must be > 0" in msg
    assert f"{path}:5: model.variant = 'mqn'" in msg and "did you mean 'mqan'" in msg  # every problem at once


def test_each_list_of_allowed_values_is_the_one_of_the_code_that_acts_on_it():
    """deca.checks writes none of them (deca imports no layer above it): the layer passes its own lists."""
    lists = {"model.variant": tuple(VARIANTS), "train.precision": TRAINING, "evaluate.precision": DECODING,
             "train.bucketing": BUCKETING, "train.placement_strategy": PLACEMENT_STRATEGIES}
    assert allowed_values() == lists and not set(lists) & set(RULES)
    for key, allowed in lists.items():
        with pytest.raises(ConfigError) as err:
            checked_params("params.yaml", {key: "nope"}, choices=allowed_values())
        assert f"--set {key}=nope: {key} = 'nope': must be one of {', '.join(allowed)}" in str(err.value)
        workers = {"train.num_workers": 1}  # a placement other than PACK places Ray workers (not local mode)
        checked_params("params.yaml", {key: allowed[-1], **workers}, choices=allowed_values())


def test_unknown_keys_get_a_suggestion():
    with pytest.raises(ConfigError, match=r"'iteratons' \(did you mean 'iterations'\?\)"):
        load_params("params.yaml", overrides={"train.iteratons": 5})


def test_defaults_and_the_shipped_params_pass():
    from deca.checks import check_values

    check_values(Params(), {})
    load_params("params.yaml")


def test_deca_train_refuses_a_bad_value_before_starting_anything(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params.yaml").write_text("train:\n  storage_dir: runs\n", encoding="utf-8")
    code = main(["train", "--set", "model.dropout=1.5", "--run-name", "x"])
    err = capsys.readouterr().err
    assert code == 1 and "model.dropout = 1.5: must be in [0, 1)" in err and "Traceback" not in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mlflow.db").exists()


def test_unknown_task_and_metric_names_get_edit_distance_suggestions():
    from deca.errors import DecaError
    from deca.registry import get_task
    from eval.metrics.registry import get_metric

    with pytest.raises(DecaError, match=r"unknown task 'sqaud' \(did you mean squad\?\)"):
        get_task("sqaud")  # a substring match found nothing here
    with pytest.raises(KeyError, match=r"did you mean rouge"):
        get_metric("rougel")


def test_a_model_without_input_features_is_refused_at_load():
    overrides = {"model.word_vectors": None, "model.char_ngram_dim": 0, "model.embedding_dim": 0}
    with pytest.raises(ConfigError, match="model: no input features"):
        load_params("params.yaml", overrides=overrides)


def test_key_lines_of_an_alias_bomb_is_empty_and_fast():
    import time

    from deca.params_file import key_lines
    from tests.deca.test_config import mapping_bomb

    start = time.perf_counter()
    assert key_lines(mapping_bomb()) == {}
    assert time.perf_counter() - start < 1
    assert key_lines("a:\n  b: &x {c: 1}\n  d: *x\n") == {"a": 1, "a.b": 2, "a.b.c": 2, "a.d": 3, "a.d.c": 2}
