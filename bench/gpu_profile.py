"""Where a training step and a greedy decoding go on the device: kernels launched, host synchronisations, the
device's busy time and the floor they imply, per phase, for each switch (torch.profiler).

On a GPU, per phase (training steps on SQuAD- and SST-shaped batches at the paper's token budget; greedy
decoding of 256 examples x 50 steps, EOS suppressed), with `--cuda-graphs` off and on:
  s/step       wall time of one step (or one whole decoding), synchronized, median over --steps
  kernels      GPU kernels that ran per step (memory copies and sets not counted)
  launches     kernel and graph launches the host made per step (a replayed graph is one launch)
  syncs        host synchronisations per step (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
               blocking cudaMemcpy)
  busy ms      the sum of the kernels' own durations per step: what the GPU computed
  floor ms     busy ms + launches x --launch-us: the step if nothing but launching and computing cost time
  same ids     greedy decoding chose the same ids with the switch on as with it off (same precision)
On a CPU, the same phases with the operators that took the most of a training step's time (self CPU time).

    python3 -m bench.gpu_profile --device cuda --raw .gpu/corpora          # on a GPU machine (bench/gpu_check.sh)
    .venv/bin/python -m bench.gpu_profile --device cpu --configs fp32 --steps 2   # where a CPU step's time goes
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from bench.batches import SHARED, budget_batches, make_vocab, middle, read_task
from bench.speedcheck_case import harness_optimizer, model_config, optimizer_step, sync
from mqan import precision as precisions
from mqan.batch import collate
from mqan.model import build_model
from mqan.vectors import VectorSource
from mqan.vocab import EOS_ID

SYNCS = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy")
LAUNCHES = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")


def counts(prof, steps: int) -> dict[str, float]:
    """Kernels, launches, synchronisations and busy milliseconds per step from a profile of `steps` steps."""
    kernels = launches = syncs = 0
    busy_us = 0.0
    for e in prof.key_averages():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            if not e.key.startswith(("Memcpy", "Memset")):
                kernels += e.count
                busy_us += getattr(e, "self_device_time_total", None) or getattr(e, "self_cuda_time_total", 0.0)
        elif e.key in LAUNCHES:
            launches += e.count
        elif e.key in SYNCS:
            syncs += e.count
    return {"kernels": kernels / steps, "launches": launches / steps, "syncs": syncs / steps,
            "busy ms": busy_us / steps / 1000}


def exact_batches(rows: list[dict], budget: int) -> list[list[dict]]:
    """Batches whose rows share their context and question lengths (train.bucketing: exact), cut by the budget,
    largest first."""
    groups: dict[tuple[int, int], list[dict]] = {}
    for r in rows:
        groups.setdefault((len(r["context_tokens"]), len(r["question_tokens"])), []).append(r)
    batches = [b for g in groups.values() for b in budget_batches(g, budget)]
    return sorted(batches, key=len, reverse=True)


def measure(fn, steps: int, warmup: int, device: torch.device) -> dict[str, float]:
    """Time `fn` (one step) `steps` times after `warmup`, then profile it `steps` more times."""
    for _ in range(warmup):
        fn()
    sync(device)
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    cuda = device.type == "cuda"
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities) as prof:
        for _ in range(steps):
            fn()
        sync(device)
    row = {"s/step": statistics.median(times)}
    if cuda:
        return {**row, **counts(prof, steps)}
    top = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12)
    return {**row, "top": top}


def phases(model, vocab, data: dict, decode_rows: dict, args, device, precision: str, graphs: bool,
           train: bool = True) -> dict[str, callable]:
    """The functions that run one step of each phase on `device` in `precision` (training only with `train`)."""
    opt = harness_optimizer(model)
    out: dict[str, callable] = {}
    kinds = [(task, bucketing) for task in ("squad", "sst") for bucketing in args.bucketing.split(",")]
    for task, bucketing in kinds if train else ():
        if bucketing == "exact":
            batches = exact_batches(data[task], args.budget)[: max(1, args.steps)]
        else:
            batches = budget_batches(data[task], args.budget)
            batches = batches[len(batches) // 2:][: max(1, args.steps)]
        picked = [collate(b, vocab, device) for b in batches]
        state = {"i": 0}

        def train_step(picked=picked, state=state):
            b = picked[state["i"] % len(picked)]
            state["i"] += 1
            optimizer_step(model, opt, b, device, precision)

        size = sum(map(len, batches)) / len(batches)
        out[f"train step, {task}{', exact lengths' if bucketing == 'exact' else ''} ({size:.0f} ex)"] = train_step
    for task in ("sst", "squad"):
        b = collate(decode_rows[task], vocab, device)

        def decode(b=b):
            with torch.inference_mode(), precisions.autocast(device, precision):
                return model.greedy(b, max_len=args.decode_steps, cuda_graphs=graphs).ids.cpu()

        out[f"greedy {args.decode_batch}x{args.decode_steps}, {task}"] = decode
    return out


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--raw", type=Path, default=SHARED, help="corpora mirror (SQuAD dev, SST)")
    ap.add_argument("--steps", type=int, default=10, help="timed steps per phase, then as many profiled (default 10)")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--budget", type=int, default=10000, help="token budget per training batch (paper: 10000)")
    ap.add_argument("--decode-batch", type=int, default=256)
    ap.add_argument("--decode-steps", type=int, default=50)
    ap.add_argument("--configs", default="fp32,fp32+graphs,bf16+graphs",
                    help="comma-separated precision[+graphs]: fp32 or bf16, +graphs = greedy decoding with one step "
                         "captured as a CUDA graph (training steps are profiled once per precision); default %(default)s")
    ap.add_argument("--bucketing", default="budget", help="training batches: budget (length-sorted, cut by the "
                    "budget, as bench/batches.py), exact (one context and question length per batch), or both: "
                    "budget,exact (default %(default)s)")
    ap.add_argument("--launch-us", type=float, default=4.0, help="cost of one launch for the floor (default 4 us)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write the rows here")
    return ap


def setup(args, device: torch.device):
    """(model, vocab, training rows per task, decoding rows per task): MQAN over the mirror's SQuAD and SST,
    as bench/model.py builds it, with frozen random 400-d vectors."""
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    data = {"squad": read_task("squad", "validation", args.raw, 3000, 0),
            "sst": read_task("sst", "train", args.raw, 3000, 0)}
    decode_rows = {"sst": middle(read_task("sst", "validation", args.raw, 10**6, 0), args.decode_batch),
                   "squad": middle(data["squad"], args.decode_batch)}
    vocab = make_vocab([r for rows in data.values() for r in rows], 50000)
    vectors = VectorSource.from_arrays("random-400", [t.strip() for t in vocab.itos],
                                       torch.randn(len(vocab), 400).numpy())
    model = build_model(model_config(argparse.Namespace(variant="mqan", recompute_encoder=False), None), vocab,
                        word_vectors=vectors).to(device)
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4  # every decoding runs all --decode-steps steps
    return model, vocab, data, decode_rows


def main(argv=None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: PyTorch sees no CUDA device here")
    if not (args.raw / "squad" / "dev-v1.1.json").exists():
        ap.error(f"SQuAD dev not found under {args.raw}; pass --raw <mirror of the corpora>")
    model, vocab, data, decode_rows = setup(args, device)
    rows: dict[str, dict] = {}
    ids: dict[tuple[str, str], torch.Tensor] = {}
    trained: set[str] = set()  # precisions whose training steps are profiled (the switch does not change them)
    if device.type == "cuda":
        print("| configuration | phase | ms/step | kernels | launches | syncs | busy ms | floor ms | same ids |\n|"
              + "---|" * 9)
    for config in args.configs.split(","):
        precision, _, graphs = config.partition("+")
        if precision not in ("fp32", "bf16") or graphs not in ("", "graphs"):
            ap.error(f"--configs: {config!r} is not fp32|bf16 with an optional +graphs")
        train = precision not in trained
        trained.add(precision)
        for name, fn in phases(model, vocab, data, decode_rows, args, device, precision, bool(graphs), train).items():
            try:
                row = rows[f"{config} | {name}"] = measure(fn, args.steps, args.warmup, device)
                if name.startswith("greedy"):  # the same ids with the switch on as off (in the same precision)?
                    ids[(config, name)] = fn()
                    ref = ids.get((precision, name))
                    row["same ids as " + precision] = None if ref is None else bool(torch.equal(ids[(config, name)], ref))
            except Exception as exc:  # one failing configuration must not cost the others their rows
                rows[f"{config} | {name}"] = {"error": f"{type(exc).__name__}: {exc}"}
                print(f"| {config} | {name} | error: {type(exc).__name__}: {str(exc)[:300]} |", flush=True)
                continue
            print_row(config, name, row, args)
    if args.json:
        args.json.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, indent=1))
    return 0


def print_row(label: str, name: str, r: dict, args) -> None:
    if "top" in r:
        print(f"\n{label} | {name}: {r['s/step']:.3f} s/step\n{r['top']}", flush=True)
        return
    floor = r["busy ms"] + r["launches"] * args.launch_us / 1000
    same = next((f"{'yes' if v else 'NO'}" for k, v in r.items() if k.startswith("same ids") and v is not None), "-")
    print(f"| {label} | {name} | {1000 * r['s/step']:.1f} | {r['kernels']:.0f} | {r['launches']:.0f} | "
          f"{r['syncs']:.1f} | {r['busy ms']:.1f} | {floor:.1f} | {same} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
