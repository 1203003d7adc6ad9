"""Global batches split among workers (train/workers.py, train/data.py): the split changes neither the batches
nor, with the token-weighted sum of the losses and the summed gradients, the update (float64, in-process)."""
from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from deca.checks import load_params
from deca.cli import main
from deca.config import ModelConfig, Params, TrainConfig
from deca.errors import ConfigError
from mqan.batch import collate
from train.data import MultiTaskData
from train.recipe import TRAIN_COLUMNS, local_recipe
from train.workers import MinWorkersWatch, check_room, describe, parse_workers, room_for, share, worker_range


@pytest.fixture(scope="module")
def params(mini_data, tmp_path_factory):
    processed, vocab, _ = mini_data
    p = Params()
    p.data = dataclasses.replace(p.data, processed_dir=str(processed), vocab_path=str(vocab))
    p.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1, dropout=0.0,
                          embedding_dim=16, word_vectors=None, max_generative_vocab=200, max_answer_length=8)
    p.train = TrainConfig(tasks=["sst", "schema"], iterations=4, token_budget=600, lr=1e-2, warmup=2, val_every=0,
                          save_every=0, max_val_examples=4, val_batch_size=4, seed=3,
                          storage_dir=str(tmp_path_factory.mktemp("runs")))
    return p


def test_shares_partition_the_global_batch_for_any_group():
    batch = np.arange(7) * 3
    for world in (1, 2, 3, 8):
        parts = [share(batch, r, world) for r in range(world)]
        assert sorted(np.concatenate(parts).tolist()) == batch.tolist()
        assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert worker_range(2) == (2, 2) and worker_range([1, 3]) == (1, 3)
    assert describe(2) == "2" and describe([1, 3]) == "1-3"
    assert parse_workers("1-2") == [1, 2] and parse_workers("0") == 0 and parse_workers("-2") == -2
    with pytest.raises(ValueError, match="--workers 1-x: expected N or MIN-MAX"):
        parse_workers("1-x")


def test_every_group_size_cuts_the_same_global_batches(params):
    p = params.data
    data = MultiTaskData(p.processed_dir, ["sst", "schema"], 600, seed=3, columns=TRAIN_COLUMNS)
    for task in ("sst", "schema", "sst", "sst"):
        one = copy.deepcopy(data)
        whole, tokens = one.next_batch(task)
        for world in (2, 3):
            parts = [copy.deepcopy(data).next_batch(task, r, world) for r in range(world)]
            assert sorted(r["id"] for rows, _ in parts for r in rows) == sorted(r["id"] for r in whole)
            assert sum(t for _, t in parts) == tokens
        data.next_batch(task)
    assert data.state_dict() == one.state_dict()


def gradients(core: torch.nn.Module, shares: list[list[dict]], vocab) -> dict[str, torch.Tensor]:
    """The summed gradients of the token-weighted losses of `shares` (what Distributed.sum_gradients makes of
    the workers' backward passes)."""
    core.zero_grad(set_to_none=True)
    batches = [collate(rows, vocab, torch.device("cpu")) for rows in shares if rows]
    total = float(sum(b.answer_tokens for b in batches))
    for batch in batches:
        (core(batch) * (float(batch.answer_tokens) / total)).backward()
    return {n: p.grad.clone() for n, p in core.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("task", ["sst", "schema"])
def test_one_and_two_shares_give_the_same_gradient(params, task):
    torch.set_num_threads(1)
    recipe = local_recipe(params)
    recipe.core.double()
    rows, _ = copy.deepcopy(recipe.data).next_batch(task)
    halves = [copy.deepcopy(recipe.data).next_batch(task, r, 2)[0] for r in range(2)]
    assert len(rows) >= 2 and all(halves)
    one, two = gradients(recipe.core, [rows], recipe.vocab), gradients(recipe.core, halves, recipe.vocab)
    assert one.keys() == two.keys() and len(one) > 10
    for name in one:
        assert one[name].dtype == torch.float64
        assert torch.allclose(one[name], two[name], rtol=1e-9, atol=1e-12), name
    uneven = [rows[:1], rows[1:]]  # a share of one example against the rest: still the same update
    for name, grad in gradients(recipe.core, uneven, recipe.vocab).items():
        assert torch.allclose(one[name], grad, rtol=1e-9, atol=1e-12), name


@pytest.mark.parametrize("value", ["[2, 1]", "[0, 2]", "[1, 2, 3]"])
def test_a_bad_worker_range_is_one_line_naming_the_params_line(tmp_path, capsys, monkeypatch, value):
    monkeypatch.chdir(tmp_path)
    params = tmp_path / "params.yaml"
    params.write_text(f"train:\n  iterations: 5\n  num_workers: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as err:
        load_params(params)
    assert str(err.value) == (f"{params}:3: train.num_workers = {value}: must be [min, max] with 1 <= min <= max "
                              "(elastic training), or one number N >= 0")
    assert main(["train", "--params", str(params), "--set", "train.num_workers=1", "--workers", "2-1"]) == 1
    assert capsys.readouterr().err == ("error: --workers 2-1: train.num_workers = [2, 1]: must be [min, max] with "
                                       "1 <= min <= max (elastic training), or one number N >= 0\n")
    assert load_params(params, {"train.num_workers": [1, 2]}).train.num_workers == [1, 2]
    assert not (tmp_path / "checkpoints").exists()


def node(cpus: float, alive: bool = True) -> dict:
    return {"Alive": alive, "Resources": {"CPU": cpus}}


def test_room_counts_whole_workers_per_alive_node():
    assert room_for([node(1), node(1), node(4, alive=False)], {"CPU": 1.0}) == 2
    assert room_for([node(3)], {"CPU": 2.0}) == 1 and room_for([node(1.5)], {"CPU": 0.5}) == 3
    assert room_for([node(4)], {"CPU": 1.0, "GPU": 1.0}) == 0


def test_an_elastic_run_below_its_min_for_the_patience_ends_in_one_line():
    now, nodes = [0.0], [node(1), node(1)]
    watch = MinWorkersWatch(2, {"CPU": 1.0}, patience_s=30, nodes=lambda: nodes, every_s=2, clock=lambda: now[0])
    watch()
    nodes[1] = node(1, alive=False)  # a node is lost: room for 1 of the 2
    for now[0] in (10.0, 25.0):
        watch()
    nodes[1] = node(1)  # it came back in time: the count starts over
    now[0] = 30.0
    watch()
    nodes[1] = node(1, alive=False)
    now[0] = 40.0
    watch()
    now[0] = 69.0
    watch()
    now[0] = 70.0
    watch()  # asked again within every_s: not looked at
    now[0] = 71.0
    with pytest.raises(ConfigError) as err:
        watch()
    assert str(err.value) == ("train.num_workers: the cluster has had room for 1 worker(s), fewer than the minimum 2, "
                              "for 31 s; add nodes or lower the minimum, then continue with `deca train --resume`")


def test_a_min_the_cluster_cannot_hold_is_refused_before_training(params):
    def train(**changes):
        return dataclasses.replace(params, train=dataclasses.replace(params.train, **changes))

    nodes = [node(1), node(1)]
    check_room(train(num_workers=[2, 4]), {"CPU": 2.0}, nodes)  # room for the min: Ray Train grows it later
    with pytest.raises(ConfigError) as err:
        check_room(train(num_workers=[3, 4]), {"CPU": 2.0}, nodes)
    assert str(err.value) == ("train.num_workers=[3, 4] needs at least 3 workers: it needs 3 CPU but Ray has 2; "
                              "lower train.num_workers or train.cpus_per_worker (fractions such as 0.5 are allowed)")
    with pytest.raises(ConfigError, match="STRICT_SPREAD puts each of the 2 workers on its own node, but only 1"):
        check_room(train(num_workers=[2, 2], placement_strategy="STRICT_SPREAD"), {"CPU": 2.0}, [node(2)])
