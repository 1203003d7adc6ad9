"""The training recipe in one process (train/recipe.py): train steps, and starting from a trained model."""
from __future__ import annotations

import dataclasses

import pytest
import torch

from deca.config import ModelConfig, Params, TrainConfig
from deca.errors import ConfigError, DataError
from mqan.checkpoint import save_checkpoint
from train.recipe import local_recipe


@pytest.fixture(scope="module")
def params(mini_data, tmp_path_factory):
    processed, vocab, _ = mini_data
    p = Params()
    p.data = dataclasses.replace(p.data, processed_dir=str(processed), vocab_path=str(vocab))
    p.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1, dropout=0.1,
                          embedding_dim=16, word_vectors=None, max_generative_vocab=200, max_answer_length=8)
    p.train = TrainConfig(tasks=["sst"], iterations=4, token_budget=400, lr=1e-2, warmup=2, val_every=0,
                          save_every=0, max_val_examples=4, val_batch_size=4, seed=3,
                          storage_dir=str(tmp_path_factory.mktemp("runs")))
    return p


def with_train(params, **train):
    return dataclasses.replace(params, train=dataclasses.replace(params.train, **train))


def with_vocab(params, size):
    return dataclasses.replace(params, model=dataclasses.replace(params.model, max_generative_vocab=size))


@pytest.fixture(scope="module")
def trained(params, tmp_path_factory):
    torch.set_num_threads(1)
    recipe = local_recipe(params)
    steps = [recipe.train_step() for _ in range(3)]
    assert recipe.iteration == 3 and all(s.task == "sst" and s.loss > 0 for s in steps)
    return save_checkpoint(tmp_path_factory.mktemp("trained") / "model.pt", recipe.core), recipe.core


def test_init_from_copies_every_weight(params, trained):
    path, source = trained
    recipe = local_recipe(with_train(params, init_from=str(path)))
    for (name, a), b in zip(recipe.core.state_dict().items(), source.state_dict().values()):
        assert torch.equal(a, b), name
    assert recipe.logger.tags["init_replaced"] == "none"


def test_a_new_vocabulary_gets_a_new_softmax_and_keeps_the_rest(params, trained):
    path, source = trained
    recipe = local_recipe(with_train(with_vocab(params, 150), init_from=str(path), freeze_pretrained=True))
    replaced = recipe.logger.tags["init_replaced"].split(",")
    assert replaced == ["embed.weight", "out.weight", "out.bias"]
    before = {k: v.clone() for k, v in recipe.core.state_dict().items()}
    for name, value in before.items():
        if name not in replaced:
            assert torch.equal(value, source.state_dict()[name]), name
    assert recipe.core.out.weight.shape[0] == 150
    # the trained embeddings of the tokens both vocabularies have are kept (here: the first 150)
    assert torch.equal(before["embed.weight"], source.state_dict()["embed.weight"][:150])
    recipe.train_step()  # only the replaced layers are trained
    after = recipe.core.state_dict()
    assert all(torch.equal(after[k], before[k]) == (k not in replaced) for k in before)


def test_bad_starting_points_are_refused(params, trained, tmp_path):
    path, _ = trained
    bigger = dataclasses.replace(params, model=dataclasses.replace(params.model, ff_hidden=24))
    with pytest.raises(DataError, match="cannot start from this model"):
        local_recipe(with_train(bigger, init_from=str(path)))
    with pytest.raises(ConfigError, match="nothing would be trained"):
        local_recipe(with_train(params, init_from=str(path), freeze_pretrained=True))
    with pytest.raises(ConfigError, match="needs train.init_from"):
        local_recipe(with_train(params, freeze_pretrained=True))


def test_a_missing_starting_point_fails_before_ray(params, tmp_path):
    from train.driver import check_inputs

    with pytest.raises(DataError, match="no checkpoint there"):
        check_inputs(with_train(params, init_from=str(tmp_path / "nope.pt")), ["sst"])


def test_an_unused_parameter_with_find_unused_parameters_false_is_named_at_the_first_step(params):
    torch.set_num_threads(1)
    recipe = local_recipe(with_train(params, find_unused_parameters=False))
    recipe.core.register_parameter("never_used", torch.nn.Parameter(torch.zeros(3)))
    with pytest.raises(ConfigError, match=r"train.find_unused_parameters is false, but 1 trained parameter\(s\) got no "
                                          r"gradient in the first step \(never_used\); set train.find_unused_parameters"):
        recipe.train_step()
    ok = local_recipe(with_train(params, find_unused_parameters=True))
    ok.core.register_parameter("never_used", torch.nn.Parameter(torch.zeros(3)))
    ok.train_step()  # with the setting true, the unused parameter is allowed


def test_every_variant_trains_with_find_unused_parameters_false(params):
    torch.set_num_threads(1)
    for variant in ("s2s", "satt", "catt", "mqan"):
        p = dataclasses.replace(params, model=dataclasses.replace(params.model, variant=variant))
        local_recipe(with_train(p, find_unused_parameters=False)).train_step()


def test_a_bf16_recipe_trains_and_validates(params):
    torch.set_num_threads(1)
    recipe = local_recipe(with_train(params, precision="bf16"))
    assert recipe.precision in ("bf16", "fp32")  # fp32 where the CPU has no bf16 units (said in a warning)
    step = recipe.train_step()
    assert step.loss == step.loss and recipe.validate() != {}
