"""What a training worker needs to know about the others: collectives with names, and RNG states.

On a single worker (or without an initialized process group) every collective is a no-op, so the
training recipe runs unchanged in a plain process (benchmarks, experiments, tests).
"""
from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

import numpy as np
import torch


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (or the model itself)."""
    return getattr(model, "module", model)


def rng_state() -> dict[str, Any]:
    """Every random generator a worker draws from (torch, Python, NumPy, CUDA when present), as tensors,
    numbers and strings only (so that the state loads weights-only)."""
    name, keys, pos, has_gauss, cached = np.random.get_state()
    numpy = {"name": name, "keys": torch.from_numpy(keys.astype(np.int64)), "pos": int(pos),
             "has_gauss": int(has_gauss), "cached_gaussian": float(cached)}
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": numpy}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: Mapping[str, Any]) -> None:
    """Restore what `rng_state` returned (or, for states written before, NumPy's own tuple)."""
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    numpy = state["numpy"]
    if isinstance(numpy, Mapping):
        numpy = (numpy["name"], numpy["keys"].numpy().astype(np.uint32), numpy["pos"], numpy["has_gauss"],
                 numpy["cached_gaussian"])
    np.random.set_state(numpy)
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class Distributed:
    """Collectives over the workers of one run that degrade to no-ops on a single worker."""

    def __init__(self, rank: int = 0, world: int = 1, device: torch.device | None = None):
        self.rank, self.world = rank, world
        self.device = device or torch.device("cpu")
        self.active = world > 1 and torch.distributed.is_available() and torch.distributed.is_initialized()

    def sum(self, values: Mapping[str, float]) -> dict[str, float]:
        """{name: sum over the workers} in one all-reduce (float64)."""
        names = list(values)
        if not self.active:
            return {k: float(values[k]) for k in names}
        t = torch.tensor([float(values[k]) for k in names], dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return dict(zip(names, t.tolist()))

    def sum_gradients(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Replace each trained parameter's gradient by its sum over the workers, in one all-reduce of one flat
        buffer. A gradient a worker did not get (its share of the batch was empty, or the parameter was not
        used) counts as zeros; a parameter no worker got a gradient for keeps none, as on a single worker
        (Adam then leaves it alone)."""
        if not self.active:
            return
        trained = [p for p in parameters if p.requires_grad]
        got = torch.tensor([float(p.grad is not None) for p in trained], dtype=torch.float64, device=self.device)
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in trained])
        torch.distributed.all_reduce(got)
        torch.distributed.all_reduce(flat)
        offset = 0
        for p, anyone in zip(trained, got.tolist()):
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p).clone() if anyone else None
            offset += n

    def gather(self, obj: Any) -> list[Any]:
        """`obj` of every worker, in rank order (on every worker)."""
        if not self.active:
            return [obj]
        out: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out
