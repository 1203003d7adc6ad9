"""bench/lstm_paths.py: every path runs forward and backward on its batches."""
from __future__ import annotations

import torch

from bench import lstm_paths
from mqan.layers import BiLSTM


def test_each_path_runs_forward_and_backward_on_a_batch_of_mixed_lengths():
    torch.manual_seed(0)
    bilstm = BiLSTM(6, 8)
    x, packing = lstm_paths.batch(5, 12, 6)
    assert packing.width == 12 and 12 in [s[0] for s in packing.segments]
    for path in lstm_paths.PATHS:
        bilstm.zero_grad()
        lstm_paths.run(bilstm, x, packing, path, train=True)
        assert bilstm.rnn.weight_hh_l0_reverse.grad is not None
        lstm_paths.run(bilstm, x, packing, path, train=False)
