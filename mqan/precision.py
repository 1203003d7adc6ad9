"""Numeric precision of MQAN's work: fp32 (the default, exactly the reference computation), bf16 mixed
precision (training and decoding), and int8 dynamic quantization of the output projection (decoding only).

bf16 runs the forward pass under autocast on the model's device (CPU or CUDA, the same code): matrix
products, attention and LSTMs in bfloat16, with float32 weights, gradients, optimizer state and loss
reduction (master weights stay fp32; Ray all-reduces fp32 gradients). What stays fp32 for stability is
in the model (mqan/model.py and mixture.py): the switch sigmoids and every log-space sum of the
output distribution (Eq. 13: logsigmoid, logsumexp over sources and pointer positions), the vocabulary
softmax's normalizer (vocab_log_prob.py: the product W_v x runs in bf16, its logsumexp in fp32) and
greedy decoding's softmax and argmax.

int8 quantizes W_v (Eq. 11, the [d] x [d, 50,000] product that takes a third to a half of greedy
decoding on a CPU) with `torch.ao.quantization.quantize_dynamic` (fbgemm: AVX2 and AVX-512 VNNI), the rest
stays fp32. It is for CPUs without bf16 units, and for decoding only.

A CPU without bf16 units (AVX-512 BF16 or AMX) would run bf16 emulated, slower than fp32: there
`resolve` says so and runs fp32 instead.

bf16 on a CPU runs its products through oneDNN, which caches a compiled kernel per shape (1,024 by default).
Token-budget batches come in many shapes, and the cache grew a GloVe-recipe SST run's peak RSS from 1.5 GB
(fp32) to 2.3 GB; `resolve` lowers the cache to 64 kernels unless $ONEDNN_PRIMITIVE_CACHE_CAPACITY is set
(measured: 1.5 GB and no slower; docs/results/precision.md). fp32 on a CPU builds oneDNN kernels per shape too: the
unpacked BiLSTMs (mqan/unpacked.py; the staircase makes one forward and one backward kernel per distinct row
length), so the cap holds for every precision on a CPU: at 64, BiLSTM calls over 30 random SQuAD-shaped batches
peaked at 0.79 GB RSS against 0.90 GB and rising with the default 1,024, in 38.0 against 36.9 CPU seconds
(one thread, load ~12; token-budget batches seldom repeat a shape, so the cache seldom hits).
"""
from __future__ import annotations

import contextlib
import copy
import logging
import os

import torch
from torch.ao.quantization import default_dynamic_qconfig, quantize_dynamic

from deca.errors import ConfigError

log = logging.getLogger(__name__)

TRAINING = ("fp32", "bf16")
DECODING = ("fp32", "bf16", "int8")
ONEDNN_CACHE, ONEDNN_CACHE_KERNELS = "ONEDNN_PRIMITIVE_CACHE_CAPACITY", 64


def check(value: str, where: str, choices: tuple[str, ...] = TRAINING) -> str:
    """`value` if it is one of `choices`; else a ConfigError naming `where` (a key or an option)."""
    if value not in choices:
        raise ConfigError(f"{where}: {value!r} is not a precision; choose one of {', '.join(choices)}")
    return value


def bf16_supported(device: torch.device) -> bool:
    """Whether `device` computes bf16 natively (CUDA: compute capability 8 and later; CPU: oneDNN's bf16 path,
    which needs AVX-512 BF16 or AMX)."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())  # noqa: SLF001  (no public API for this)


def resolve(value: str, device: torch.device, where: str, choices: tuple[str, ...] = TRAINING) -> str:
    """The precision to run: `value`, checked; bf16 on a device without bf16 support, or int8 on CUDA, falls
    back to fp32 with a warning that says why."""
    check(value, where, choices)
    if value == "bf16" and not bf16_supported(device):
        log.warning("%s: bf16 asked for, but this %s has no bf16 units (AVX-512 BF16 or AMX): emulated bf16 would be "
                    "slower than fp32, so fp32 runs instead%s", where, device.type,
                    "; int8 speeds up decoding on such CPUs" if "int8" in choices else "")
        return "fp32"
    if value == "int8" and device.type != "cpu":
        log.warning("%s: int8 is a CPU option (fbgemm); fp32 runs on %s", where, device)
        return "fp32"
    if device.type == "cpu":
        limit_kernel_cache()
    return value


def limit_kernel_cache() -> None:
    """Cap oneDNN's per-shape kernel cache on a CPU (module docstring), unless the environment sets it. oneDNN
    reads the variable when it builds its first kernel, so this must come before the first step."""
    os.environ.setdefault(ONEDNN_CACHE, str(ONEDNN_CACHE_KERNELS))


def autocast(device: torch.device, precision: str):
    """The context of a forward pass in `precision` on `device` (nothing for fp32 and int8)."""
    if precision != "bf16":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


def quantized(model: torch.nn.Module) -> torch.nn.Module:
    """`model` with its output projection W_v int8-quantized (dynamic: weights int8, activations quantized per
    batch), for decoding on a CPU. The model itself is left as it was (a quantized copy of W_v replaces it
    in a shallow copy of the model)."""
    clone = copy.copy(model)
    clone._modules = dict(model._modules)  # noqa: SLF001  (a shallow copy that does not share its module table)
    plain = torch.nn.Linear(model.out.in_features, model.out.out_features, model.out.bias is not None)
    plain.weight, plain.bias = model.out.weight, model.out.bias  # W_v as a plain nn.Linear, which quantize_dynamic maps
    clone._modules["out"] = quantize_dynamic(torch.nn.Sequential(plain), {torch.nn.Linear: default_dynamic_qconfig},
                                             dtype=torch.qint8)[0]
    return clone
