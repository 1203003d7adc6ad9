"""bench/lstm_paths.py: every path runs on its batches, and its table and page say what each ratio is."""
from __future__ import annotations

import argparse

import torch

from bench import lstm_paths, record
from mqan import unpacked
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


def test_the_page_gives_the_command_the_load_and_the_rule():
    row = {"shape": "s", "batch": 2, "width": 9, "d_in": 4, "segments": 2, "mode": "train", "packed": 2.0,
           "directions": 0.5, "staircase": 1.0}
    text = lstm_paths.page(record.begin("bench.lstm_paths", []), [row], argparse.Namespace(threads=2, repeats=3, clock="wall"))
    assert "python -m bench.lstm_paths" in text and "Load average" in text and f"padded to {unpacked.LONG}" in text
    assert "| s | 2 x 9, 4 | 2 | train | 2.0000 | 0.5000 (4.0) | 1.0000 (2.0) |" in text
