"""Optimization from the paper's Appendix D: Adam (0.9, 0.98, 1e-9) with a warmup + inverse-sqrt schedule.

The learning rate at step k (1-based, the k-th optimizer update) is

    lr(k) = peak * min(k / warmup, sqrt(warmup / k))

It rises linearly from 0 to `peak` (2.5e-3) over `warmup` (800) steps, then decays as 1/sqrt(k). This is
the original's ``1/sqrt(d) * min(1/sqrt(k), k / (warmup * sqrt(warmup)))`` with d = 200, warmup = 800
written with the peak as the parameter, so it no longer changes with the model dimension.
With warmup = 0 the rate starts at the peak and decays as 1/sqrt(k).
"""
from __future__ import annotations

import math
from typing import Iterable

import torch


def lr_factor(step: int, warmup: int) -> float:
    """Multiplier of the peak rate for the `step`-th update (1-based)."""
    if step < 1:
        raise ValueError(f"steps are 1-based, got {step}")
    if warmup <= 0:
        return 1.0 / math.sqrt(step)
    return min(step / warmup, math.sqrt(warmup / step))


def build_optimizer(parameters: Iterable[torch.nn.Parameter], train_cfg) -> torch.optim.Adam:
    """Adam over the trainable parameters with the peak rate, betas and eps of `train_cfg`; AdamW
    (decoupled weight decay, scaled by the scheduled rate) when `train_cfg.weight_decay` > 0."""
    params = [p for p in parameters if p.requires_grad]
    if len(train_cfg.betas) != 2:
        raise ValueError(f"train.betas: expected two numbers, got {train_cfg.betas}")
    decay = train_cfg.weight_decay
    if decay < 0:
        raise ValueError(f"train.weight_decay must be >= 0, got {decay}")
    kind, extra = (torch.optim.AdamW, {"weight_decay": decay}) if decay > 0 else (torch.optim.Adam, {})
    # fused: one kernel for every parameter (2.6x faster than the per-tensor loop on CPU, same update rule)
    fused = all(p.device.type in ("cpu", "cuda") and p.dtype.is_floating_point for p in params)
    return kind(params, lr=train_cfg.lr, betas=tuple(train_cfg.betas), eps=train_cfg.eps, fused=fused, **extra)


def build_scheduler(optimizer: torch.optim.Optimizer, train_cfg) -> torch.optim.lr_scheduler.LambdaLR:
    """Per-step schedule: call ``scheduler.step()`` after each ``optimizer.step()``.

    LambdaLR evaluates its lambda at 0 on construction (for the first update) and at n after n calls of
    step(), so the rate of the k-th update is ``peak * lr_factor(k, warmup)``.
    """
    warmup = train_cfg.warmup
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda n: lr_factor(n + 1, warmup))


class WeightAverage:
    """Exponential moving average of the trainable weights: avg <- decay * avg + (1 - decay) * w after each
    optimizer step (not in the paper; `train.ema_decay`). Validation, the best checkpoint and `deca
    evaluate` then use the average, which smooths the step-to-step noise of a small task."""

    def __init__(self, model: torch.nn.Module, decay: float):
        if not 0.0 < decay < 1.0:
            raise ValueError(f"train.ema_decay must be in (0, 1) (0 disables the average), got {decay}")
        self.decay = decay
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.average = [p.detach().clone() for p in self.params]

    @torch.no_grad()
    def update(self) -> None:
        torch._foreach_lerp_(self.average, [p.detach() for p in self.params], 1.0 - self.decay)

    @torch.no_grad()
    def swap(self) -> None:
        """Exchange the live weights and the average (call twice to restore)."""
        for p, a in zip(self.params, self.average):
            tmp = p.detach().clone()
            p.copy_(a)
            a.copy_(tmp)

    def state_dict(self) -> dict:
        return {"decay": self.decay, "average": [a.clone() for a in self.average]}

    def load_state_dict(self, state: dict) -> None:
        if len(state["average"]) != len(self.average):
            raise ValueError("the checkpoint's weight average does not match this model")
        with torch.no_grad():
            for a, s in zip(self.average, state["average"]):
                a.copy_(s)


def clip_gradients(parameters: Iterable[torch.nn.Parameter], max_norm: float) -> float:
    """Clip the global gradient norm to `max_norm` (0 or less: no clipping); returns the norm before."""
    params = [p for p in parameters if p.grad is not None]
    if not params:
        return 0.0
    if max_norm and max_norm > 0:
        return float(torch.nn.utils.clip_grad_norm_(params, max_norm))
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in params])))
