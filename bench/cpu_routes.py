"""mqan/cpu_routes.py's routes against PyTorch's own kernels on this CPU, interleaved, median of `--repeats` wall
times (2 threads by default): dropout forward + backward (`F.dropout` against the route's mask), training attention
with dropout (SDPA against the route's written-out math path), and decoding's W_v product ([256, 200] x
[200, 50,000]: MKL's `F.linear` against oneDNN on a W_v packed once). The routes' docstring quotes these figures;
`--record` keeps them (bench/record.py).

    python -m bench.cpu_routes --record docs/results/profiles/intel_xeon/cpu_routes.json
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
from torch.nn import functional as F

from bench import record
from mqan import cpu_routes


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(pytorch, route, repeats: int) -> dict:
    """Median ms of each, run alternately after one untimed call of each; ratio = PyTorch / route."""
    pytorch(), route()
    times = {"pytorch": [], "route": []}
    for _ in range(repeats):
        times["pytorch"].append(timed(pytorch))
        times["route"].append(timed(route))
    ms = {k: round(statistics.median(v) * 1000, 2) for k, v in times.items()}
    return {**ms, "ratio": round(ms["pytorch"] / ms["route"], 2)}


def cases(repeats: int) -> dict:
    def backward(fn, *inputs):
        return lambda: fn(*inputs).sum().backward()

    x = torch.randn(287, 40, 200, requires_grad=True)  # an SST-shaped batch's encoder activations
    q, k, v = (torch.randn(50, 3, 150, 200, requires_grad=True) for _ in range(3))  # SQuAD-shaped attention
    mask = torch.ones(50, 1, 150, 150, dtype=torch.bool)
    w, b, h = torch.randn(50_000, 200), torch.randn(50_000), torch.randn(256, 200)
    packed = torch.ops.mkldnn._reorder_linear_weight(w, None)  # noqa: SLF001  (as VocabProjection does)
    return {
        "dropout [287, 40, 200], forward + backward": compare(
            backward(F.dropout, x, 0.2, True), backward(cpu_routes._Dropout.apply, x, 0.2), repeats),  # noqa: SLF001
        "attention with dropout [50, 3, 150, 200], forward + backward": compare(
            backward(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.2)),
            backward(lambda: cpu_routes.attention(q, k, v, mask, 0.2)), repeats),
        "W_v [256, 200] x [200, 50,000], no gradient": compare(
            lambda: F.linear(h, w, b),
            lambda: torch.ops.mkldnn._linear_pointwise(h, packed, b, "none", [], ""), repeats),  # noqa: SLF001
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--record", type=Path, help="write the figures as a JSON record (bench/record.py)")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    started = record.begin("bench.cpu_routes")
    found = cases(args.repeats)
    for name, figures in found.items():
        print(f"{name}: PyTorch {figures['pytorch']} ms, route {figures['route']} ms (x{figures['ratio']})")
    if args.record:
        record.write(args.record, started, {"repeats": args.repeats, "threads": args.threads}, found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
