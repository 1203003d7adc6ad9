"""A BiLSTM over right-padded rows of different lengths, run one direction at a time on the padded tensor, where
the fused RNN kernels run (cuDNN's persistent kernels on a GPU, oneDNN's on a CPU) instead of the packed path.

On a CPU a packed LSTM takes aten's generic loop, one small matrix product per time step in each direction
and as many autograd nodes for the backward pass (aten/src/ATen/native/RNN.cpp; pytorch/pytorch#149194);
an unpacked fp32 or bf16 one runs oneDNN's fused `mkldnn_rnn_layer`, forward and backward. Measured on the
paper's BiLSTMs one at a time (bench/lstm_paths.py, docs/results/profiles/lstm_paths*.md), packing is slower on
the CPU at most shapes (not all: SST's compression BiLSTM trains faster packed), so the CPU runs unpacked where
the rows are wide (`path`) and the result is exactly the packed one:

- `directions`: each direction is one call on the whole padded batch. The forward direction reads each row as
  it is (padding comes after every real position); the backward one reads each row's real positions reversed
  (`Packing.reverse_rows`), so padding again comes last. Every real position's output is the packed one; the
  final (h, c) of a row shorter than L is not (the kernel returns the state after the padding).
- `staircase`: for the BiLSTMs whose final state is used (the decoder starts from it). Rows sorted by length,
  each direction runs in one call per distinct length: the segment up to the shortest row's end on every row,
  then on the rows still running, and so on; a row's final (h, c) is the state at the end of its last
  segment, as packing gives it. One call per distinct length instead of one step per position.

Both for single-layer BiLSTMs (the paper's; stacked layers would need nn.LSTM's inter-layer dropout).
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from mqan.packing import Packing, run_unpacked

LONG = 64  # rows padded to this width or more run unpacked on a CPU (bench/lstm_paths.py)


def path(x: torch.Tensor, packing: Packing, final_state: bool, layers: int) -> str:
    """How a BiLSTM runs rows of different lengths: "packed", "directions" or "staircase" (module docstring).

    GPU: `directions` in fp32 where the final state is discarded (cuDNN's persistent kernels), else packed.
    CPU: where oneDNN runs the LSTM (fp32, bf16) and the rows are at least `LONG` wide, `directions`, or
    `staircase` for the final state. Shorter rows stay packed: with narrow inputs unpacked at every width,
    training steps on the Intel Xeon were no faster and SST's peak RSS rose (docs/results/speed.md, session
    2026-11-29-fp32-narrow); no whole-step record exists for the AMD EPYC, where one BiLSTM ran narrow rows
    faster unpacked (docs/results/profiles/lstm_paths.md).
    """
    if layers != 1:
        return "packed"
    if x.is_cuda:
        return "directions" if not final_state and run_unpacked(x) else "packed"
    if not onednn(x) or packing.width < LONG:
        return "packed"
    return "staircase" if final_state else "directions"


def onednn(x: torch.Tensor) -> bool:
    """Whether an unpacked LSTM over `x` runs oneDNN's fused kernels on this CPU (aten's `use_mkldnn`: fp32 or
    bf16 input, oneDNN built and enabled); float64 takes the generic loop either way."""
    lower = torch.is_autocast_enabled("cpu") and torch.get_autocast_dtype("cpu") == torch.bfloat16
    return (torch.backends.mkldnn.is_available() and torch.backends.mkldnn.enabled
            and (x.dtype in (torch.float32, torch.bfloat16) or lower))


def _weights(rnn: nn.LSTM, suffix: str) -> list[torch.Tensor]:
    """The first layer's parameters of one direction ("" forward, "_reverse" backward), in _VF.lstm's order."""
    return [getattr(rnn, f"{name}_l0{suffix}") for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]


def _lstm(rnn: nn.LSTM, suffix: str, x: torch.Tensor, h0: torch.Tensor, c0: torch.Tensor):
    """One direction of `rnn`'s first layer over x [b, t, d_in] from (h0, c0) [1, b, H] -> (out [b, t, H], h, c)."""
    return torch._VF.lstm(x, (h0, c0), _weights(rnn, suffix), True, 1, 0.0, rnn.training, False, True)


def directions(rnn: nn.LSTM, x: torch.Tensor, packing: Packing) -> torch.Tensor:
    """x [B, L, d_in] -> outputs [B, L, 2H] (forward ; backward), zeros at padding; no final state."""
    outs = []
    for suffix, inp in (("", x), ("_reverse", packing.reverse_rows(x))):
        h0 = x.new_zeros(1, packing.batch, rnn.hidden_size)
        out = _lstm(rnn, suffix, inp, h0, h0)[0]  # [B, L, H]
        outs.append(out if suffix == "" else packing.reverse_rows(out))
    return torch.cat(outs, -1).masked_fill(~packing.real[..., None], 0.0)


def _staircase(rnn: nn.LSTM, suffix: str, x: torch.Tensor, packing: Packing):
    """One direction over rows sorted by descending length, x [B, L, d_in] -> (out [B, L, H] zeros at padding,
    final h and c [1, B, H]), one call per distinct length (`Packing.segments`)."""
    B, L, H = packing.batch, packing.width, rnn.hidden_size
    h = c = x.new_zeros(1, B, H)
    outs, hs, cs, start = [], [], [], 0
    for end, running, after in packing.segments:
        out, h, c = _lstm(rnn, suffix, x[:running, start:end], h[:, :running], c[:, :running])
        outs.append(F.pad(out, (0, 0, 0, 0, 0, B - running)))  # [B, end - start, H]
        hs.append(h[:, after:])  # the rows whose last position is end - 1
        cs.append(c[:, after:])
        start = end
    out = F.pad(torch.cat(outs, 1), (0, 0, 0, L - start))
    return out, torch.cat(hs[::-1], 1), torch.cat(cs[::-1], 1)


def staircase(rnn: nn.LSTM, x: torch.Tensor, packing: Packing):
    """x [B, L, d_in] -> (outputs [B, L, 2H] zeros at padding, (h, c) each [2, B, H] as nn.LSTM orders them)."""
    outs, hs, cs = [], [], []
    for suffix, reverse in (("", False), ("_reverse", True)):
        inp = packing.reverse_rows(x) if reverse else x
        out, h, c = _staircase(rnn, suffix, inp.index_select(0, packing.sorted_indices), packing)
        out = out.index_select(0, packing.unsorted_indices)
        outs.append(packing.reverse_rows(out) if reverse else out)
        hs.append(h.index_select(1, packing.unsorted_indices))
        cs.append(c.index_select(1, packing.unsorted_indices))
    return torch.cat(outs, -1), (torch.cat(hs), torch.cat(cs))
