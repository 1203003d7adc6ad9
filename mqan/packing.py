"""Padded batches in and out of cuDNN's packed layout, with one gather and one scatter.

`torch.nn.utils.rnn.pack_padded_sequence` and `pad_packed_sequence` do the same job but cost the GPU
dearly: the sort order moves to the device with a blocking copy (a host synchronisation), packing
concatenates one slice per time step and unpacking launches one copy per time step (a few hundred small
kernels for a SQuAD context, forward and backward, for each of the encoder's BiLSTMs). `Packing` computes,
on the CPU and once per batch field, where each packed element sits in the flattened [B * L] padded
batch; the packed data is then one `index_select` and the padded output one `index_copy`. The index
tensors travel to the GPU from pinned memory without blocking the host.

The packed order is exactly `pack_padded_sequence`'s (rows sorted by `torch.sort(lengths, descending=True)`,
time-major), so the LSTM sees the same data and gives the same results.

When every row of a batch has the same length (length-bucketed batches, train.bucketing: exact) nothing is
packed: the LSTM runs on the padded tensor as it is, which is also what lets cuDNN pick its persistent
kernels for small hidden sizes (PyTorch's `get_algo` in aten/src/ATen/native/cudnn/RNN.cpp chooses
CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H only for unpacked input, hidden size <= 192 forward and <= 128
backward; packed input always gets the standard algorithm, which launches kernels per time step).

Rows of different lengths can run unpacked too, one direction at a time (mqan/unpacked.py): the backward
direction reads each row with its real positions reversed (`reverse_index`, an involution), so padding comes
last; a row's final state is read at its own end by running the rows sorted by length, one call per distinct
length (`segments`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.nn.utils.rnn import PackedSequence


def run_unpacked(x: torch.Tensor) -> bool:
    """Whether rows of equal length run unpacked: everywhere but on a GPU under bf16 autocast, where cuDNN's
    unpacked RNN measured 8-14x slower per training step than fp32 (a host-side cost, 0.5-0.9 s per step on an
    H200 with 9-20 ms of GPU work; docs/results/gpu_floor.md), so bf16 keeps the packed path it had."""
    return not (x.is_cuda and torch.is_autocast_enabled("cuda"))


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """A CPU tensor on `device`; to a GPU from pinned memory, so the host does not wait for the copy."""
    if device.type != "cuda":
        return t.to(device)
    return t.pin_memory().to(device, non_blocking=True)


@dataclass(frozen=True)
class Packing:
    """Where the real positions of a right-padded batch [B, L, ...] go in the packed layout."""

    batch: int  # B
    width: int  # L
    equal: bool  # every row is L long: the LSTM may run on the padded tensor, nothing to pack
    index: torch.Tensor  # [N] position in the flattened [B * L] of each packed element, on the device
    batch_sizes: torch.Tensor  # [L'] rows still running at each time step (CPU, as PackedSequence wants)
    sorted_indices: torch.Tensor  # [B] rows by descending length, on the device
    unsorted_indices: torch.Tensor  # [B] its inverse, on the device
    reverse_index: torch.Tensor  # [B * L] each row's real positions reversed, padding in place
    real: torch.Tensor  # [B, L] bool, True at real positions, on the device
    segments: tuple[tuple[int, int, int], ...]  # per distinct length n, ascending: (n, rows of length >= n, > n)

    @classmethod
    def of(cls, lengths: torch.Tensor, width: int, device: torch.device | str = "cpu") -> "Packing":
        """The packing of rows of `lengths` (a CPU tensor, each in 1..width) padded to `width`."""
        device = torch.device(device)
        lengths = lengths.cpu().long()
        B = len(lengths)
        sorted_lengths, order = torch.sort(lengths, descending=True)  # as pack_padded_sequence sorts
        t = torch.arange(int(sorted_lengths[0]))
        valid = t[:, None] < sorted_lengths[None, :]  # [L', B] time-major, rows in sorted order
        index = (order[None, :] * width + t[:, None])[valid]  # [N]
        unsorted = torch.empty_like(order).scatter_(0, order, torch.arange(B))
        pos, n = torch.arange(width)[None, :], lengths[:, None]
        reverse = (torch.arange(B)[:, None] * width + torch.where(pos < n, n - 1 - pos, pos)).reshape(-1)
        distinct = torch.unique(lengths).tolist()  # ascending
        running = [int((lengths >= u).sum()) for u in distinct]
        return cls(B, width, bool((lengths == width).all()), to_device(index, device), valid.sum(1), to_device(order, device),
                   to_device(unsorted, device), to_device(reverse, device), to_device(pos < n, device),
                   tuple(zip(distinct, running, running[1:] + [0])))

    def pack(self, x: torch.Tensor) -> PackedSequence:
        """x [B, L, D] -> the PackedSequence of its real positions."""
        data = x.reshape(self.batch * self.width, x.shape[-1]).index_select(0, self.index)
        return PackedSequence(data, self.batch_sizes, self.sorted_indices, self.unsorted_indices)

    def reverse_rows(self, x: torch.Tensor) -> torch.Tensor:
        """x [B, L, D] with each row's real positions in reverse order (padding stays where it is)."""
        flat = x.reshape(self.batch * self.width, x.shape[-1]).index_select(0, self.reverse_index)
        return flat.view(self.batch, self.width, x.shape[-1])

    def unpack(self, packed: PackedSequence) -> torch.Tensor:
        """The packed output -> [B, L, H], zeros at padding."""
        data = packed.data
        out = data.new_zeros(self.batch * self.width, data.shape[-1]).index_copy(0, self.index, data)
        return out.view(self.batch, self.width, data.shape[-1])
