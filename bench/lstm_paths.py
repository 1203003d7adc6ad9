"""One BiLSTM of MQAN (hidden d/2 = 100 per direction) over right-padded rows of mixed lengths, by each path of
mqan/unpacked.py against packing: forward + backward (training) and forward only (decoding's encoder), in fp32
on this machine's CPU. The shapes are those of the paper's batches (token budget 10,000: SQuAD contexts of
~240 tokens in batches of ~40, questions of ~20; SST rows of ~30 in batches of ~200; decoding batches of 256).
This table times one BiLSTM per call, not a whole step (docs/results/profiles/lstm_paths.md); mqan/unpacked.py's
rule (`path`) is weighed on whole steps (docs/results/speed.md).

    python -m bench.lstm_paths                     # the table: paths interleaved, median of 5 repeats
    python -m bench.lstm_paths --record docs/results/profiles/lstm_paths_<cpu>.json   # then `make results`

The pages under docs/results/profiles/ are rendered by `make results` from the records beside them
(experiments/results/lstm_paths.py; a new record's page is listed in experiments/results/pages.py).

Rows of each batch: lengths uniform in [L/4, L], one row of length L (its width). A loaded machine slows
every path; read the ratios, not the seconds, and the load printed with them.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import torch

from bench import record
from mqan import unpacked
from mqan.layers import BiLSTM
from mqan.packing import Packing

BOTH, EVAL = ("train", "eval"), ("eval",)  # decoding's encoder runs without gradients: eval only
# (name, batch, width, d_in, modes): the encoder's BiLSTMs on paper-shaped batches
SHAPES = [("squad context, BiLSTM_ind", 40, 240, 200, BOTH), ("squad context, compression", 40, 240, 800, BOTH),
          ("squad question", 40, 20, 200, BOTH), ("sst context", 200, 30, 200, BOTH),
          ("sst context, compression", 200, 30, 800, BOTH), ("sst question", 200, 6, 200, BOTH),
          ("short: 12 wide", 100, 12, 200, BOTH), ("mid: 64 wide", 120, 64, 200, BOTH),
          ("mid: 100 wide", 80, 100, 200, BOTH), ("decode squad context", 256, 160, 200, EVAL),
          ("decode sst context", 256, 30, 200, EVAL), ("tiny", 4, 8, 16, BOTH)]
PATHS = ("packed", "directions", "staircase")
CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def batch(B: int, L: int, d_in: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(max(1, L // 4), L + 1, (B,), generator=g)
    lengths[0] = L
    return torch.randn(B, L, d_in, generator=g), Packing.of(lengths, L)


def run(bilstm: BiLSTM, x: torch.Tensor, packing: Packing, path: str, train: bool) -> None:
    with torch.set_grad_enabled(train):
        xg = x.requires_grad_(train)
        if path == "packed":
            h0 = x.new_zeros(2, packing.batch, bilstm.rnn.hidden_size)
            out = packing.unpack(bilstm.rnn(packing.pack(xg), (h0, h0))[0])
        elif path == "directions":
            out = unpacked.directions(bilstm.rnn, xg, packing)
        else:
            out = unpacked.staircase(bilstm.rnn, xg, packing)[0]
        if train:
            out.sum().backward()


def interleaved(fns: dict, repeats: int, clock=time.perf_counter) -> dict[str, float]:
    """Each of `fns` once untimed (oneDNN builds its kernels for the shape), then `repeats` rounds that run every
    path once each, the order rotated per round (a burst of load hits each path alike): the median per path.
    `clock`: wall time, or the process's CPU time (time.process_time), which time spent waiting for a core
    under other processes' load does not stretch."""
    for fn in fns.values():
        fn()
    times = {name: [] for name in fns}
    names = list(fns)
    for r in range(repeats):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = clock()
            fns[name]()
            times[name].append(clock() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def measure(repeats: int, clock=time.perf_counter) -> list[dict]:
    rows = []
    for name, B, L, d_in, modes in SHAPES:
        torch.manual_seed(0)
        bilstm = BiLSTM(d_in, 200)
        x, packing = batch(B, L, d_in)
        for mode in modes:
            row = {"shape": name, "batch": B, "width": L, "d_in": d_in, "segments": len(packing.segments),
                   "mode": mode, "load": record.load()}
            fns = {path: (lambda p=path: run(bilstm, x, packing, p, mode == "train")) for path in PATHS}
            row.update(interleaved(fns, repeats, clock))
            rows.append(row)
            print(table([row], header=len(rows) == 1), f"load {row['load']}", flush=True)
    return rows


def table(rows: list[dict], header: bool = True) -> str:
    lines = ["| shape | B x L, d_in | distinct lengths | mode | packed s | directions s (x) | staircase s (x) |",
             "|---|---|---|---|---|---|---|"] if header else []
    for r in rows:
        lines.append(f"| {r['shape']} | {r['batch']} x {r['width']}, {r['d_in']} | {r['segments']} | {r['mode']} "
                     f"| {r['packed']:.4f} | {r['directions']:.4f} ({r['packed'] / r['directions']:.1f}) "
                     f"| {r['staircase']:.4f} ({r['packed'] / r['staircase']:.1f}) |")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--clock", choices=CLOCKS, default="wall",
                    help="wall time, or CPU time (with one thread and OMP_WAIT_POLICY=PASSIVE: the work, which "
                         "other processes' load stretches little)")
    ap.add_argument("--record", type=Path, help="write the figures as a JSON record (bench/record.py)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    started = record.begin("bench.lstm_paths")
    print(f"load {os.getloadavg()}, {args.threads} threads; x = packed time / the path's time")
    rows = measure(args.repeats, CLOCKS[args.clock])
    print(f"load after {os.getloadavg()}")
    settings = {"repeats": args.repeats, "threads": args.threads, "clock": args.clock,
                "OMP_WAIT_POLICY": os.environ.get("OMP_WAIT_POLICY")}
    if args.record:  # its page: docs/results/profiles/<name>.md beside it, by `make results`
        record.write(args.record, started, settings, {"rows": rows})
    print(table(rows))
    return 0
