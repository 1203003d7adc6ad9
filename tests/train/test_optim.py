import math

import pytest
import torch

from deca.config import TrainConfig
from train.optim import WeightAverage, build_optimizer, build_scheduler, clip_gradients, lr_factor

torch.set_num_threads(1)


def test_lr_factor_warmup_then_inverse_sqrt():
    assert lr_factor(1, 800) == pytest.approx(1 / 800)
    assert lr_factor(400, 800) == pytest.approx(0.5)
    assert lr_factor(800, 800) == 1.0
    assert lr_factor(3200, 800) == pytest.approx(0.5)
    assert lr_factor(4, 0) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        lr_factor(0, 800)


def test_matches_the_original_formula_at_d200():
    # original: 1/sqrt(d) * min(1/sqrt(i), i/(warmup*sqrt(warmup))), d=200, warmup=800
    for i in (1, 10, 799, 800, 801, 5000, 100000):
        original = 1 / math.sqrt(200) * min(1 / math.sqrt(i), i / (800 * math.sqrt(800)))
        assert 2.5e-3 * lr_factor(i, 800) == pytest.approx(original, rel=1e-9)


def test_optimizer_and_scheduler_step_by_step():
    cfg = TrainConfig(lr=1.0, warmup=4, betas=[0.9, 0.98], eps=1e-9)
    p = torch.nn.Parameter(torch.zeros(3))
    opt = build_optimizer([p], cfg)
    assert opt.defaults["betas"] == (0.9, 0.98) and opt.defaults["eps"] == 1e-9
    sched = build_scheduler(opt, cfg)
    seen = []
    for _ in range(8):
        seen.append(opt.param_groups[0]["lr"])
        p.grad = torch.ones(3)
        opt.step()
        sched.step()
    assert seen == pytest.approx([0.25, 0.5, 0.75, 1.0, math.sqrt(4 / 5), math.sqrt(4 / 6), math.sqrt(4 / 7),
                                  math.sqrt(4 / 8)])
    # the scheduler state round-trips (resume continues the same curve)
    state = sched.state_dict()
    sched2 = build_scheduler(build_optimizer([torch.nn.Parameter(torch.zeros(3))], cfg), cfg)
    sched2.load_state_dict(state)
    assert sched2.last_epoch == sched.last_epoch


def test_weight_decay_uses_decoupled_adamw():
    assert type(build_optimizer([torch.nn.Parameter(torch.zeros(2))], TrainConfig())) is torch.optim.Adam
    p = torch.nn.Parameter(torch.ones(2))
    opt = build_optimizer([p], TrainConfig(lr=0.1, weight_decay=0.5))
    assert isinstance(opt, torch.optim.AdamW)
    p.grad = torch.zeros(2)  # no gradient: only the decay moves the weights, by lr * decay
    opt.step()
    assert p.detach().tolist() == pytest.approx([0.95, 0.95])
    with pytest.raises(ValueError, match="weight_decay"):
        build_optimizer([p], TrainConfig(weight_decay=-1.0))


def test_frozen_parameters_are_left_out():
    a, b = torch.nn.Parameter(torch.zeros(2)), torch.nn.Parameter(torch.zeros(2), requires_grad=False)
    opt = build_optimizer([a, b], TrainConfig())
    assert len(opt.param_groups[0]["params"]) == 1


def test_clip_gradients():
    p = torch.nn.Parameter(torch.zeros(4))
    p.grad = torch.full((4,), 3.0)  # norm 6
    assert clip_gradients([p], 1.0) == pytest.approx(6.0)
    assert torch.linalg.vector_norm(p.grad).item() == pytest.approx(1.0, rel=1e-5)
    p.grad = torch.full((4,), 3.0)
    assert clip_gradients([p], 0) == pytest.approx(6.0)
    assert torch.linalg.vector_norm(p.grad).item() == pytest.approx(6.0)


def test_weight_average_updates_swaps_and_round_trips():
    model = torch.nn.Linear(2, 1, bias=False)
    frozen = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    model.register_parameter("frozen", frozen)
    with torch.no_grad():
        model.weight.fill_(1.0)
    avg = WeightAverage(model, 0.9)
    assert len(avg.average) == 1  # frozen parameters are not averaged
    for value in (2.0, 3.0):
        with torch.no_grad():
            model.weight.fill_(value)
        avg.update()
    expected = 0.9 * (0.9 * 1.0 + 0.1 * 2.0) + 0.1 * 3.0
    assert avg.average[0].flatten().tolist() == pytest.approx([expected, expected])
    avg.swap()
    assert model.weight.flatten().tolist() == pytest.approx([expected, expected])
    avg.swap()
    assert model.weight.tolist() == [[3.0, 3.0]]
    other = WeightAverage(model, 0.9)
    other.load_state_dict(avg.state_dict())
    assert torch.equal(other.average[0], avg.average[0])
    with pytest.raises(ValueError, match="ema_decay"):
        WeightAverage(model, 1.0)
