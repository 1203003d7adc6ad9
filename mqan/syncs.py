"""Where MQAN's code avoids host synchronisations, and the check that it does.

On a GPU, any operation whose result size or value the host must know (`.item()`, `bool(t)`, `.tolist()`,
`nonzero`, `unique`, boolean-mask indexing, a blocking copy) makes the host wait until the device has
finished everything queued before it; the kernels after it start only when the host launches them again.
The training step and the greedy decoding loop avoid them on a GPU (`avoid(t)`); on a CPU, where
waiting is free, some keep the cheaper data-dependent form (`torch.unique` featurizes each distinct token
once). `SyncRecorder` lists the synchronising operations a piece of code runs, so that a test can hold
the GPU path to none on any machine (with `avoid` forced on).
"""
from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode

CHECK_EVERY = 8  # greedy decoding on a GPU: steps between the host checks of "every answer has <eos>"

# aten operations that need a value or size from the device (each one a synchronisation on a GPU)
SYNCING = ("_local_scalar_dense", "nonzero", "unique", "masked_select", "item", "_unique2", "unique_dim",
           "unique_consecutive", "equal", "is_nonzero")


def avoid(t: torch.Tensor) -> bool:
    """Whether code touching `t` must avoid host synchronisations (it lives on a GPU)."""
    return t.is_cuda


def check_every(device: torch.device) -> int:
    """Steps between the checks of "every answer has <eos>": every step on a CPU, where asking is free."""
    return CHECK_EVERY if device.type == "cuda" else 1


class SyncRecorder(TorchDispatchMode):
    """Records the synchronising aten operations run inside it (`calls`: their names, in order)."""

    def __init__(self):
        super().__init__()
        self.calls: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.__name__.split(".")[0]
        if name in SYNCING or (name in ("index", "index_put", "index_put_") and _bool_index(args[1])):
            self.calls.append(name)
        return func(*args, **(kwargs or {}))


def _bool_index(indices) -> bool:
    """Whether aten.index's `indices` hold a boolean mask (the result's size depends on the mask's values)."""
    return any(isinstance(t, torch.Tensor) and t.dtype in (torch.bool, torch.uint8) for t in indices)
