"""The project's side of ../shared/speedcheck (its README, "The project's side"): `speedcheck_case` builds
this project's MQAN for one case as bench/model.py does, in any configuration the harness passes with
`--proj-opt KEY=VALUE`, and returns the function the harness times. The case as the harness defines it,
its model configuration (`model_config`) and its training step (`optimizer_step`), is defined here, and
bench/model.py, bench/cpu_profile.py and bench/gpu_profile.py take it from here.

Options: `precision=fp32|bf16|int8` (int8: decoding only; mqan/precision.py), `recompute_encoder=0|1`
(model.recompute_encoder: the encoder arms rerun in the backward pass, memory for time), `cuda_graphs=0|1`
(greedy decoding with one step captured as a CUDA graph, mqan/static_decode.py), and `device` (the
harness passes `--device`: the model and each batch on it, a synchronize before each time is read). There is no compile
option: torch.compile of MQAN was measured and left out (docs/results/speed.md: on 2 CPU cores the first
training step took 157 s to compile and every new batch shape recompiled, 83 s; graph breaks at
pack_padded_sequence, nonzero and unique, which token-budget batches cannot avoid).

    ../shared/speedcheck/run_all.sh                                  # fp32, from the project root
    PROJ_ARGS="--proj-opt precision=bf16" ../shared/speedcheck/run_all.sh
"""
from __future__ import annotations

import argparse
import time

import torch

from deca.config import ModelConfig, TrainConfig
from mqan import precision
from mqan.allocator import keep_large_blocks
from mqan.batch import collate
from mqan.model import build_model, count_parameters
from mqan.vectors import VectorSource
from mqan.vocab import EOS_ID, Vocab
from train.optim import build_optimizer

KNOWN = "precision=fp32|bf16|int8, recompute_encoder=0|1, cuda_graphs=0|1, device=cpu|cuda[:N]"


def parse_options(options: dict | None, mode: str) -> tuple[str, bool, bool, torch.device]:
    """(precision, recompute_encoder, cuda_graphs, device) from the harness's `--proj-opt` strings and its
    `device`; SystemExit names an unknown option or value, or a device that is not there."""
    opts = dict(options or {})
    chosen = opts.pop("precision", "fp32")
    flags = {k: opts.pop(k, "0") for k in ("recompute_encoder", "cuda_graphs")}
    device = torch.device(opts.pop("device", "cpu"))
    if opts:
        raise SystemExit(f"unknown --proj-opt {', '.join(sorted(opts))}; known: {KNOWN}")
    for key, value in flags.items():
        if value not in ("0", "1"):
            raise SystemExit(f"--proj-opt {key}={value}: choose 0 or 1")
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"device {device}: PyTorch sees no CUDA device here")
    if chosen == "int8" and device.type != "cpu":
        raise SystemExit("--proj-opt precision=int8 is a CPU option (fbgemm); on a GPU choose fp32 or bf16")
    choices = precision.DECODING if mode == "decode" else precision.TRAINING
    try:
        precision.check(chosen, "--proj-opt precision", choices)
    except Exception as exc:  # a ConfigError: the harness shows SystemExit's text
        raise SystemExit(str(exc)) from None
    return chosen, flags["recompute_encoder"] == "1", flags["cuda_graphs"] == "1", device


def model_config(args, head_dim: int | None) -> ModelConfig:
    """The benchmarked configuration: params.yaml's model with §9's inputs (frozen random 400-d vectors only)."""
    return ModelConfig(variant=args.variant, head_dim=head_dim, word_vectors=None, char_ngram_dim=0, embedding_dim=0,
                       recompute_encoder=args.recompute_encoder)


def build(itos: list[str], generative: int, seed: int, head_dim: int | None, recompute: bool = False):
    """(model, vocab) as bench/model.py builds them, with the harness's frozen random 400-d vectors."""
    torch.manual_seed(seed)
    vocab = Vocab(itos, generative)
    g = torch.Generator().manual_seed(seed)
    vectors = VectorSource.from_arrays("random-400", [t.strip() for t in vocab.itos],
                                       torch.randn(len(itos), 400, generator=g).numpy())
    cfg = model_config(argparse.Namespace(variant="mqan", recompute_encoder=recompute), head_dim)
    return build_model(cfg, vocab, word_vectors=vectors), vocab


def speedcheck_case(mode: str, *, itos, generative, seed, decode_steps, head_dim, default_malloc, options):
    """(info, fn): fn(rows) times one training step -> (seconds, examples, loss) or one greedy decoding of
    exactly `decode_steps` steps -> (seconds, examples, steps); collation and the copy to the device are
    outside the timed region, which ends with a device synchronize."""
    chosen, recompute, graphs, device = parse_options(options, mode)
    if device.type == "cpu":
        precision.limit_kernel_cache()  # as train.precision does on a CPU (mqan/precision.py)
    if not default_malloc:
        keep_large_blocks()
    model, vocab = build(itos, generative, seed, head_dim, recompute)
    model.to(device)
    info = {"trainable_params": count_parameters(model), "heads": model.cfg.heads,
            "head_dim": head_dim or model.cfg.dimension, "precision": chosen, "recompute_encoder": recompute,
            "cuda_graphs": graphs, "device": str(device), "bf16_units": precision.bf16_supported(device),
            "optimizer": "Adam, fused (train.optim)" if mode == "train" else None}
    if mode == "train":
        return info, train_step_fn(model, vocab, chosen, device)
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4  # every decoding runs all steps
    decoder = precision.quantized(model) if chosen == "int8" else model

    def decode(rows):
        b = collate(rows, vocab, device)
        sync(device)
        t0 = time.perf_counter()
        with torch.inference_mode(), precision.autocast(device, chosen):
            out = decoder.greedy(b, max_len=decode_steps, incremental=True, cuda_graphs=graphs)
        sync(device)
        t = time.perf_counter() - t0
        assert out.ids.shape[1] == decode_steps, out.ids.shape
        return t, b.size, out.ids.shape[1]

    return info, decode


def sync(device: torch.device) -> None:
    """Wait for the device's queued work (CUDA runs asynchronously), so that a wall-clock time covers it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def harness_optimizer(model: torch.nn.Module) -> torch.optim.Optimizer:
    """The harness's Adam (lr 1e-4, betas (0.9, 0.98), eps 1e-9) as training builds it (train.optim: fused, the
    same update rule as the per-tensor loop), over the trainable parameters: every bench's training step."""
    return build_optimizer(model.parameters(), TrainConfig(lr=1e-4, betas=[0.9, 0.98], eps=1e-9))


def train_step_fn(model, vocab, chosen: str, device: torch.device = torch.device("cpu")):
    """One training step as the harness defines it (Adam lr 1e-4, betas (0.9, 0.98), eps 1e-9, clip 1.0)."""
    opt = harness_optimizer(model)

    def step(rows):
        b = collate(rows, vocab, device)
        sync(device)
        t0 = time.perf_counter()
        loss = optimizer_step(model, opt, b, device, chosen)
        sync(device)
        return time.perf_counter() - t0, b.size, loss.item()

    return step


def optimizer_step(model, opt, batch, device: torch.device, chosen: str) -> torch.Tensor:
    """One training step as the harness defines it: forward in `chosen` precision, backward, clip the gradient
    norm at 1.0, the optimizer's step; returns the loss (on the device: reading it waits for the device)."""
    model.train()
    with precision.autocast(device, chosen):
        loss = model(batch)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    opt.step()
    return loss
