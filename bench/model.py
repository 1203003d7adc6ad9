"""Throughput and peak memory of MQAN in the paper configuration on real SQuAD dev and SST batches, in each
precision, side by side against this project's own fp32 in the same run.

Training steps (forward, backward, Adam) on batches cut by the paper's token budget
(sum over the batch of len(c) + len(q) + 5 len(a) <= budget), and greedy decoding of 256-example
batches (incremental; in fp32 also recomputing the prefix, which must give the same outputs). As in the
measurement of the original (../shared/speedcheck): random frozen 400-d embeddings in place of GloVe +
char n-grams, a 50,000-token generative vocabulary (the data's tokens by frequency, then filler tokens),
EOS suppressed while decoding so every batch runs the same number of steps.

Configurations (`--configs`, each in its own process so that its peak RSS is its own): fp32; bf16
(autocast, mqan/precision.py); int8 (W_v quantized; decoding only); fp32 with glibc's default
malloc thresholds (the allocator setting's effect, mqan/allocator.py). Ratios are against fp32 of
the same run. Against the original, use ../shared/speedcheck (bench/speedcheck_case.py is this project's
side of it): a ratio against figures measured elsewhere is not a measurement.

    .venv/bin/python -m bench.model                           # all configurations, 3 timed steps each
    .venv/bin/python -m bench.model --configs fp32,bf16 --steps 10
    .venv/bin/python -m bench.model --phases --precision bf16 # where the time goes (each phase's share)
    python3 -m bench.model --device cuda --steps 20 --warmup 3  # on a GPU: adds TFLOP/s and MFU per row
"""
from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import torch

# ../shared/speedcheck imports read_task, middle, make_vocab and budget_batches from here (bench/batches.py's)
from bench.batches import SHARED, budget_batches, make_vocab, middle, read_task
# the harness (../shared/speedcheck) calls bench.model.speedcheck_case, or without it bench.model.model_config
from bench.speedcheck_case import harness_optimizer, model_config, optimizer_step, speedcheck_case  # noqa: F401
from mqan import precision as precisions
from mqan.allocator import keep_large_blocks
from mqan.batch import collate
from mqan.model import build_model, count_parameters
from mqan.vectors import VectorSource
from mqan.vocab import EOS_ID, Vocab

ROOT = Path(__file__).resolve().parents[1]


def with_root_on_path() -> dict[str, str]:
    """The environment with this tree first on PYTHONPATH, so that a child `python -m bench.model` imports this
    checkout's packages from any working directory (relative paths in its arguments stay the caller's)."""
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}


CONFIGS = {"fp32": ("fp32", False), "bf16": ("bf16", False), "int8": ("int8", False),
           "fp32-glibc-malloc": ("fp32", True)}  # name -> (precision, glibc's default malloc)


def peak_rss_gb() -> float:
    """Peak resident memory of the process so far. Phases run from the lightest (decoding SST) to the
    heaviest (training), so each phase's figure bounds its own peak from above."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


DEVICE = torch.device("cpu")  # --device; set once in main()


def sync() -> None:
    """Wait for the device's queued work, so that a wall-clock time covers it (CUDA runs asynchronously)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize()


def peak_gb() -> float:
    """The memory figure of a row: peak RSS on the CPU; on CUDA the peak GPU memory allocated since the last
    `reset_peak()` (each phase's own)."""
    return torch.cuda.max_memory_allocated() / 2**30 if DEVICE.type == "cuda" else peak_rss_gb()


def reset_peak() -> None:
    if DEVICE.type == "cuda":
        torch.cuda.reset_peak_memory_stats()


def step_flops(model, batch, precision: str) -> float:
    """Floating-point operations of one training step's forward and backward on `batch` (PyTorch's FLOP
    counter: matrix products and attention; element-wise work is not counted), for the MFU estimate."""
    from torch.utils.flop_counter import FlopCounterMode

    device = next(model.parameters()).device
    with FlopCounterMode(display=False) as counter:
        with precisions.autocast(device, precision):
            loss = model(batch)
        loss.backward()
    model.zero_grad(set_to_none=True)
    return float(counter.get_total_flops())


def bench_train(model, batches, vocab, steps: int, warmup: int, precision: str = "fp32") -> dict:
    opt = harness_optimizer(model)
    model.train()
    rng = random.Random(0)
    picked = [rng.choice(batches) for _ in range(steps + warmup)]  # batches of every length, as training sees
    times, examples, tokens, ctx, ctx_pad, flops = [], 0, 0, [], [], 0.0
    reset_peak()
    for i, rows in enumerate(picked):
        b = collate(rows, vocab, DEVICE)
        if DEVICE.type == "cuda" and i >= warmup:
            flops += step_flops(model, b, precision)
        sync()
        t0 = time.perf_counter()
        optimizer_step(model, opt, b, DEVICE, precision)
        sync()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
            examples += b.size
            tokens += b.answer_tokens
            ctx.append(float(b.context.lengths.float().mean()))
            ctx_pad.append(b.context.ext.shape[1])
    t = sum(times)
    return {"s/step": t / len(times), "examples/s": examples / t, "answer tok/s": tokens / t,
            "examples/batch": examples / len(times), "ctx mean": sum(ctx) / len(ctx),
            "ctx padded": sum(ctx_pad) / len(ctx_pad), "peak GB": peak_gb(), "TFLOP/s": flops / t / 1e12}


def bench_decode(model, rows, vocab, steps: int, incremental: bool, warmup: bool = False,
                 precision: str = "fp32") -> tuple[dict, list]:
    """One timed greedy decoding of `rows` (after an untimed one with `warmup`), in `precision`."""
    b = collate(rows, vocab, DEVICE)
    decoder = precisions.quantized(model) if precision == "int8" else model
    reset_peak()
    with torch.inference_mode(), precisions.autocast(DEVICE, precision):
        if warmup:
            decoder.greedy(b, max_len=steps, incremental=incremental)
        sync()
        t0 = time.perf_counter()
        out = decoder.greedy(b, max_len=steps, incremental=incremental)
        sync()
        t = time.perf_counter() - t0
    return {"s/step": t, "examples/s": b.size / t, "answer tok/s": b.size * out.ids.shape[1] / t,
            "examples/batch": b.size, "ctx mean": float(b.context.lengths.float().mean()),
            "ctx padded": b.context.ext.shape[1], "peak GB": peak_gb(), "TFLOP/s": 0.0}, out.tokens


class PhaseTimer:
    """Wall time spent inside `model.encode` and inside the vocabulary projection `model.out` (W_v, Eq. 11),
    measured in place during the real calls (a wrapper and forward hooks), until `close()`."""

    def __init__(self, model) -> None:
        self.model, self.seconds, self._start = model, Counter(), 0.0
        encode = model.encode

        def timed_encode(*args, **kwargs):
            t0 = time.perf_counter()
            out = encode(*args, **kwargs)
            self.seconds["encoder"] += time.perf_counter() - t0
            return out

        model.encode = timed_encode
        self._hooks = [model.out.register_forward_pre_hook(lambda *_: self._tick()),
                       model.out.register_forward_hook(lambda *_: self._tock())]

    def _tick(self) -> None:
        self._start = time.perf_counter()

    def _tock(self) -> None:
        self.seconds["vocabulary projection"] += time.perf_counter() - self._start

    def close(self) -> None:
        del self.model.encode  # the class's method again
        for h in self._hooks:
            h.remove()


def train_phases(model, batches, vocab, steps: int, precision: str = "fp32") -> dict[str, float]:
    """Seconds per training step in each phase (forward: encoder, decoder and loss; backward; clipping and
    Adam), after one untimed step."""
    opt = harness_optimizer(model)
    model.train()
    rng, acc = random.Random(0), Counter()
    for i in range(steps + 1):
        b = collate(rng.choice(batches), vocab)
        timer = PhaseTimer(model)
        t0 = time.perf_counter()
        with precisions.autocast(torch.device("cpu"), precision):
            loss = model(b)
        t1 = time.perf_counter()
        timer.close()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        t3 = time.perf_counter()
        if i:
            enc = timer.seconds["encoder"]
            acc.update({"forward: encoder": enc, "forward: decoder + loss": t1 - t0 - enc, "backward": t2 - t1,
                        "clip + Adam": t3 - t2})
    return {k: v / steps for k, v in acc.items()}


def decode_phases(model, rows, vocab, steps: int, precision: str = "fp32") -> dict[str, float]:
    """Seconds of one greedy decoding of `rows` (`steps` forced steps) in each phase: the encoder, the
    vocabulary projection W_v c~_t, the rest; after one untimed decoding of the same batch."""
    b = collate(rows, vocab)
    model.eval()
    with torch.inference_mode(), precisions.autocast(torch.device("cpu"), precision):
        model.greedy(b, max_len=steps)
        timer = PhaseTimer(model)
        t0 = time.perf_counter()
        model.greedy(b, max_len=steps)
        total = time.perf_counter() - t0
        timer.close()
    return {**timer.seconds, "the rest (decoder layers, LSTM, attention, mixture and its argmax)":
            total - sum(timer.seconds.values())}


def print_phases(model, data: dict, decode_rows: dict, vocab: Vocab, args) -> None:
    """Where the time goes: each phase's share of a training step and of a greedy decoding."""
    for task in ("squad", "sst"):
        phases = train_phases(model, budget_batches(data[task], args.budget), vocab, args.steps, args.precision)
        total = sum(phases.values())
        print(f"  train step, {task}: {total:.2f} s; "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in phases.items()))
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4
    for task in ("sst", "squad"):
        phases = decode_phases(model, decode_rows[task], vocab, args.decode_steps, args.precision)
        total = sum(phases.values())
        print(f"  greedy, {task}, {args.decode_steps} steps: {total:.2f} s; "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in phases.items()))
    print_projection_bound(model, args)


def print_projection_bound(model, args) -> None:
    """The time of the vocabulary projection W_v c~_t alone, --decode-steps times on a --decode-batch batch:
    the floor of greedy decoding's time in this precision."""
    x = torch.randn(args.decode_batch, model.out.in_features)
    out = precisions.quantized(model).out if args.precision == "int8" else model.out
    with torch.inference_mode(), precisions.autocast(torch.device("cpu"), args.precision):
        out(x)
        t0 = time.perf_counter()
        for _ in range(args.decode_steps):
            out(x)
        t = time.perf_counter() - t0
    print(f"  the vocabulary projection alone, [{args.decode_batch}, {model.out.in_features}] x "
          f"[{model.out.in_features}, {model.out.out_features:,}] {args.decode_steps} times ({args.precision}): {t:.2f} s")


def bench_config(args, vocab: Vocab, vectors: VectorSource, data: dict, decode_rows: dict) -> list:
    """Greedy decoding and training steps of one configuration: [(phase, result)]."""
    torch.manual_seed(args.seed)
    cfg = model_config(args, args.head_dim or None)
    model = build_model(cfg, vocab, word_vectors=vectors).to(DEVICE)
    print(f"{args.config}: {cfg.variant}, heads {cfg.heads} x {args.head_dim or cfg.dimension}, "
          f"{count_parameters(model):,} trainable parameters; {DEVICE}, {args.threads} threads", file=sys.stderr, flush=True)
    results = []
    bias = model.out.bias[EOS_ID].item()
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4  # never stop early: every batch runs --decode-steps steps
    for task in ("sst", "squad"):
        inc, toks = bench_decode(model, decode_rows[task], vocab, args.decode_steps, True, True, args.precision)
        results.append((f"greedy, {task} dev", inc))
        if args.precision == "fp32" and not args.default_malloc:
            full, toks_full = bench_decode(model, decode_rows[task], vocab, args.decode_steps, incremental=False)
            same = "same outputs" if toks == toks_full else "OUTPUTS DIFFER"
            results.append((f"greedy, {task} dev, recompute prefix ({same})", full))
    with torch.no_grad():
        model.out.bias[EOS_ID] = bias
    if args.precision != "int8":  # int8 is for decoding
        for task in ("squad", "sst"):
            r = bench_train(model, budget_batches(data[task], args.budget), vocab, args.steps, args.warmup,
                            args.precision)
            results.append((f"train step, {task}, budget {args.budget}", r))
    return results


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--configs", help=f"which of {', '.join(CONFIGS)} (default: all; on cuda fp32,bf16)")
    ap.add_argument("--config", help=argparse.SUPPRESS)  # one configuration, in this process (the child run)
    ap.add_argument("--steps", type=int, default=3, help="timed training steps per task (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up steps per task (default 1)")
    ap.add_argument("--budget", type=int, default=10000, help="token budget per batch (paper: 10000)")
    ap.add_argument("--decode-batch", type=int, default=256, help="examples per decoding batch (default 256)")
    ap.add_argument("--decode-steps", type=int, default=50, help="greedy steps, EOS suppressed (default 50)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--variant", default="mqan", help="model variant (default mqan)")
    ap.add_argument("--head-dim", type=int, default=0, help="attention head size, 0 for d (default; 67 is the "
                                                           "original's head size)")
    ap.add_argument("--recompute-encoder", action="store_true",
                    help="model.recompute_encoder: rerun the encoder arms in the backward pass (memory for time)")
    ap.add_argument("--phases", action="store_true",
                    help="instead of the table: where the time of a training step and of greedy decoding goes")
    ap.add_argument("--precision", default="fp32", help="with --phases: fp32, bf16 or int8 (default fp32)")
    ap.add_argument("--raw", type=Path, default=SHARED, help=f"corpora mirror (default {SHARED})")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu",
                    help="where the model runs (default cpu); on cuda rows add TFLOP/s and MFU, memory is the GPU's")
    ap.add_argument("--peak-tflops", type=float, default=989.0,
                    help="the device's dense bf16 peak for the MFU column (default 989: H100/H200 SXM)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.configs is None:
        args.configs = "fp32,bf16" if args.device == "cuda" else ",".join(CONFIGS)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: PyTorch sees no CUDA device here")
    if args.device == "cuda" and args.phases:
        ap.error("--phases times CPU phases with wall clocks; on CUDA use torch.profiler")
    if args.device == "cuda" and "int8" in args.configs.split(",") and not args.config:
        ap.error("--configs: int8 is a CPU option (fbgemm); on cuda choose from fp32, bf16")
    return ap, args


def run_children(args, argv) -> int:
    """Each configuration in its own process; the table with ratios against fp32 of the same run."""
    names = [c for c in args.configs.split(",") if c]
    unknown = [c for c in names if c not in CONFIGS]
    if unknown:
        raise SystemExit(f"--configs: unknown {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    results = {}
    for name in names:
        out = subprocess.run([sys.executable, "-m", "bench.model", *argv, "--config", name], check=True,
                             stdout=subprocess.PIPE, text=True, env=with_root_on_path()).stdout
        results[name] = dict(json.loads(out.strip().splitlines()[-1]))
    print_table(results, args)
    return 0


def print_table(results: dict[str, dict], args) -> None:
    cuda = args.device == "cuda"
    cols = ["examples/batch", "ctx mean", "s/step", "examples/s", "peak GB"] + (["TFLOP/s", "MFU %"] if cuda else [])
    base = results.get("fp32", {})
    print(f"\n| configuration | phase | {' | '.join(cols)} | speed vs fp32 | memory vs fp32 |")
    print("|" + "---|" * (len(cols) + 4))
    for name, phases in results.items():
        for phase, r in phases.items():
            r = {**r, "MFU %": 100 * r["TFLOP/s"] / args.peak_tflops}
            ref = base.get(phase)
            ratio = f"x{r['examples/s'] / ref['examples/s']:.2f} | {r['peak GB'] / ref['peak GB']:.2f}" if ref else "- | -"
            print(f"| {name} | {phase} | " + " | ".join(f"{r[c]:.2f}" if c in ("peak GB", "MFU %") else f"{r[c]:.1f}"
                                                      for c in cols) + f" | {ratio} |")
    if cuda:
        print(f"\n({torch.cuda.get_device_name()}, torch {torch.__version__}; peak GB = peak GPU memory allocated in "
              f"the phase; TFLOP/s counts matrix products and attention only (torch.utils.flop_counter), MFU against "
              f"--peak-tflops {args.peak_tflops:g}, training steps only)")
        return
    units = precisions.bf16_supported(torch.device("cpu"))
    print(f"\n(torch {torch.__version__}, {args.threads} threads, CPU bf16 units: {'yes' if units else 'no'}; "
          "decoding s/step = seconds per batch; peak GB = peak RSS of each configuration's own process)")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    ap, args = parse_args(argv)
    if not (args.phases or args.config):
        return run_children(args, argv)
    if args.config:
        args.precision, args.default_malloc = CONFIGS[args.config]
    else:
        args.default_malloc = False
    if not args.default_malloc:
        keep_large_blocks()
    global DEVICE
    DEVICE = torch.device(args.device)
    if DEVICE.type == "cpu":
        precisions.limit_kernel_cache()  # as train.precision does on a CPU
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if not (args.raw / "squad" / "dev-v1.1.json").exists():
        ap.error(f"SQuAD dev not found under {args.raw}; pass --raw <mirror of the corpora>")
    print("reading and tokenizing SQuAD dev and SST ...", file=sys.stderr, flush=True)
    data = {"squad": read_task("squad", "validation", args.raw, 3000, args.seed),
            "sst": read_task("sst", "train", args.raw, 3000, args.seed)}
    decode_rows = {"sst": middle(read_task("sst", "validation", args.raw, 10**6, args.seed), args.decode_batch),
                   "squad": middle(data["squad"], args.decode_batch)}
    vocab = make_vocab([r for rows in data.values() for r in rows], 50000)
    vectors = VectorSource.from_arrays("random-400", [t.strip() for t in vocab.itos],
                                       torch.randn(len(vocab), 400).numpy())
    if args.phases:
        cfg = model_config(args, args.head_dim or None)
        print(f"where the time goes, heads {cfg.heads} x {args.head_dim or cfg.dimension}, {args.precision}, "
              f"{args.threads} threads:")
        print_phases(build_model(cfg, vocab, word_vectors=vectors), data, decode_rows, vocab, args)
        return 0
    print(json.dumps(bench_config(args, vocab, vectors, data, decode_rows)))
    return 0

if __name__ == "__main__":
    sys.exit(main())
