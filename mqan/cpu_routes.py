"""Routes around two of PyTorch's CPU kernels: dropout's mask on every CPU (aten's bernoulli_; also inside
attention, `attention`) and, on a CPU that is not Intel's, the fp32 product with W_v in greedy decoding (MKL's
GEMM, measured slower than oneDNN's on an AMD EPYC; on an Intel Xeon, four runs of `bench.cpu_routes` gave oneDNN
x1.0-1.4, unsettled, so Intel keeps MKL until a decoding side by side says otherwise). Each is the
same computation: dropout's distribution and scaling, the product to fp32 rounding. On a GPU, and wherever the
conditions below do not hold, PyTorch's own kernels run.

Dropout (`Dropout`, `dropout`). `nn.Dropout` draws its mask with `bernoulli_(1 - p)` into a float tensor; off
Intel, PyTorch skips MKL's generator and draws element by element, one 64-bit number (two Mersenne Twister
draws) and a double comparison each (aten's `bernoulli_scalar_kernel`, DistributionKernels.cpp): ~5.7% of a
SQuAD-shaped training step (docs/results/profiles/cpu_train.txt). It then divides the mask by 1 - p and keeps
that float mask for the backward pass, 4 bytes an element. On Intel, MKL's generator draws the mask, and it is
still slower: on an Intel Xeon with AMX (2 threads, quiet; `python -m bench.cpu_routes`,
docs/results/profiles/intel_xeon/cpu_routes.json), dropout forward and backward of [287, 40, 200] ran x1.86
faster here than with `F.dropout`, and attention with dropout ([50, 3, 150, 200], forward and backward) x1.31
faster than SDPA; bernoulli_ was 12.7% of an SST-shaped training step there
(docs/results/profiles/intel_xeon/fp32/cpu_train.txt). So every CPU takes this route. Here the mask comes from
random 32-bit integers, two per 64-bit draw (`random_` over the full 64-bit range: the same serial generator, half as many draws): an
element is kept when its integer is below round((1 - p) 2^32), so P(keep) is 1 - p within 2^-33 (bernoulli_'s
double comparison: within 2^-53), each element independently, and kept elements are scaled by 1 / (1 - p):
`nn.Dropout`'s distribution and scaling. The backward pass keeps a bool mask (1 byte an element). What
changes is the random stream: the same seed gives other masks than `nn.Dropout` (reproducible from the seed
all the same, and the same masks when a checkpointed arm is recomputed, which restores the generator's
state). Eval mode is `F.dropout`. Attention with dropout on its weights (`attention`, training): PyTorch's
scaled_dot_product_attention takes its math path on a CPU when dropout_p > 0 and draws that mask with
bernoulli_ too; here the same math path is written out (softmax of the scaled, masked scores, dropout, times
the values), with `dropout`'s mask: a bool mask kept for backward instead of a float one of [B, H, L, L].

W_v in greedy decoding (`VocabProjection`, an `nn.Linear`: same parameters, state dict and hooks). Greedy
decoding multiplies [B, d] by W_v^T [d, 50,000] at every step, its largest product. PyTorch sends an fp32
`F.linear` to MKL; oneDNN's matmul on a W_v reordered
once into its blocked layout measured faster at [256, 200] x [200, 50,000] on this AMD EPYC (interleaved medians
at load 12-25): x1.26-1.28 in wall time with one and two threads, x1.11 in one thread's CPU time (so part of the
wall-clock gain is MKL's threading under load); reordering at every call was slower than MKL, and in training's
products ([1000, 200] x [200, 50,000] and its backward, W_v reordered at every step) oneDNN gained nothing (x0.97,
x0.84), so training keeps MKL. The same product summed in another order: equal to fp32 rounding, not bitwise.
The reordered copy (as large as W_v: 40 MB at d = 200) is made at the first gradient-free fp32 CPU call in eval
mode and kept, with the versions of W_v and b it was made from,
until either changes (an optimizer step, `load_state_dict`) or the layer enters training mode, which drops
it. Training, gradients, float64 and bf16 autocast take `nn.Linear`'s forward.
"""
from __future__ import annotations

import functools
import math
from pathlib import Path

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F


@functools.cache
def intel_cpu() -> bool:
    """Whether this machine's CPU is Intel's, where W_v's product keeps MKL (module docstring)."""
    info = Path("/proc/cpuinfo")
    return info.is_file() and "GenuineIntel" in info.read_text(encoding="utf-8", errors="replace")


def keep_mask(shape: torch.Size, p: float, device: torch.device | str = "cpu") -> torch.Tensor:
    """A bool tensor of `shape`, each element False (dropped) with probability p in [0, 1] (within 2^-33),
    independently."""
    n = math.prod(shape)
    words = torch.empty((n + 1) // 2, dtype=torch.int64, device=device).random_(-2**63, None)  # 64 random bits
    keep_below = round((1.0 - p) * 2**32) - 2**31  # the uniform int32 values below it keep their element
    if keep_below > torch.iinfo(torch.int32).max:  # p below 2^-33: nothing is dropped
        return torch.ones(shape, dtype=torch.bool, device=device)
    return (words.view(torch.int32)[:n] < keep_below).view(shape)


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, p: float) -> torch.Tensor:
    """`F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)` (mask bool, True = attend, never a
    whole row masked), written out where its dropout would draw with bernoulli_ (module docstring)."""
    if p == 0.0 or q.device.type != "cpu":
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=p)
    scores = (q @ k.transpose(-2, -1)) * q.shape[-1] ** -0.5  # [..., Lq, Lk]
    if mask is not None:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    return dropout(scores.softmax(-1), p, True) @ v


class _Dropout(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float) -> torch.Tensor:
        keep = keep_mask(x.shape, p, x.device)
        ctx.save_for_backward(keep)
        ctx.scale = 1.0 / (1.0 - p)
        return x.mul(keep).mul_(ctx.scale)  # a product, as nn.Dropout's (NaN stays NaN), faster than a masked fill

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        (keep,) = ctx.saved_tensors
        return grad.mul(keep).mul_(ctx.scale), None


def dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """`F.dropout(x, p, training)`, the mask drawn by `keep_mask` on a CPU (module docstring)."""
    if not training or p == 0.0 or p == 1.0 or x.device.type != "cpu":
        return F.dropout(x, p, training)
    if not 0.0 < p < 1.0:
        raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    return _Dropout.apply(x, p)


class Dropout(nn.Dropout):
    """`nn.Dropout` (same p, same scaling, same state dict) with `dropout`'s mask on a CPU."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return dropout(x, self.p, self.training)


def packed_matmul() -> bool:
    """Whether oneDNN's packed matmul exists here and pays (a CPU not Intel's: module docstring)."""
    return (not intel_cpu() and torch.backends.mkldnn.is_available()
            and hasattr(torch.ops.mkldnn, "_linear_pointwise") and hasattr(torch.ops.mkldnn, "_reorder_linear_weight"))


class VocabProjection(nn.Linear):
    """`nn.Linear` (W_v, b) with gradient-free fp32 CPU products on a oneDNN-packed W_v (module docstring)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True):
        super().__init__(in_features, out_features, bias)
        self._packed: tuple[tuple, torch.Tensor] | None = None  # (versions it was made from, packed W_v)

    def _packable(self, x: torch.Tensor) -> bool:
        return (not self.training and not torch.is_grad_enabled() and x.device.type == "cpu" and x.dim() == 2
                and x.dtype == torch.float32 and self.weight.dtype == torch.float32
                and not torch.is_autocast_enabled("cpu") and packed_matmul())

    def packed_weight(self) -> torch.Tensor:
        """W_v in oneDNN's layout, made again when W_v or b changed since it was made."""
        w, b = self.weight, self.bias
        key = (w.data_ptr(), w._version, None if b is None else (b.data_ptr(), b._version))
        if self._packed is None or self._packed[0] != key:
            self._packed = None  # the old copy goes before the new one is made
            self._packed = (key, torch.ops.mkldnn._reorder_linear_weight(w.detach(), None))
        return self._packed[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self._packable(x):
            return F.linear(x, self.weight, self.bias)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed_weight(), self.bias, "none", [], "")

    def train(self, mode: bool = True):
        if mode:
            self._packed = None
        return super().train(mode)
