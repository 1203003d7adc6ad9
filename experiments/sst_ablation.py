"""Quick single-process SST runs for comparing settings (the ablations behind the README's SST recipe).

A plain training loop (no Ray, one thread, so two settings can run side by side on 2 cores) over the
processed SST and vocabulary of the experiments' workdir (bench/workdir.py), training with `deca train`'s own step
(train/recipe.py, in-process). Every --every iterations it decodes the full validation split greedily and
prints the EM, and, with --ema (train.ema_decay), the EM of the moving average of the weights. Lines also
go to --log.

    .venv/bin/python -m experiments.sst_ablation --minutes 11 --overlay infra/params/from_scratch.yaml
    .venv/bin/python -m experiments.sst_ablation --minutes 11 --overlay infra/params/from_scratch.yaml \\
        --set model.char_ngram_dim=0                         # the recipe without char n-grams
    .venv/bin/python -m experiments.sst_ablation --minutes 8 --set model.embedding_init_std=1.0   # the old init

Run `python -m experiments.experiment_sst sst` once first (it prepares the workdir's data and vocabulary).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="training time (default: %(default)s)")
    ap.add_argument("--every", type=int, default=100, help="validate every N iterations (default: %(default)s)")
    ap.add_argument("--ema", type=float, default=0.0,
                    help="also validate a moving average with this decay (train.ema_decay; an overlay's is ignored)")
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    ap.add_argument("--overlay", action="append", default=[], metavar="FILE")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log", help="also append the lines to this file")
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default: %(default)s); on cuda the lines add "
                    "the peak GPU memory and an MFU estimate against --peak-tflops")
    ap.add_argument("--peak-tflops", type=float, default=989.0,
                    help="the device's dense bf16 peak for the MFU estimate (default 989: H100/H200 SXM)")
    return ap.parse_args()


def build_recipe(args):
    """The in-process recipe of `deca train` on the workdir's SST, with the ablation's settings."""
    import torch

    from deca.checks import load_params
    from bench.workdir import overlay_overrides
    from deca.params_args import parse_overrides
    from train.distributed import Distributed
    from train.recipe import local_recipe

    work = Path(args.workdir)
    if not (work / "processed" / "sst" / "train").is_dir():
        sys.exit(f"no processed SST in {work}: run `python -m experiments.experiment_sst sst` first")
    overrides = {"data.processed_dir": str(work / "processed"), "data.vocab_path": str(work / "vocab.txt"),
                 "train.lr": 0.001, "train.warmup": 200, "train.token_budget": 5000,
                 **overlay_overrides(args.overlay), "train.ema_decay": args.ema, **parse_overrides(args.overrides)}
    params = load_params(ROOT / "params.yaml", overrides=overrides)
    torch.set_num_threads(args.threads)
    return local_recipe(params, ["sst"], dist=Distributed(device=torch.device(args.device)))


def main() -> None:
    args = parse_args()
    import torch

    from mqan.decode import decode
    from train.data import read_share

    recipe = build_recipe(args)
    model, vocab = recipe.core, recipe.vocab
    val = read_share(recipe.params.data.processed_dir, "sst", "validation").to_pylist()

    def em() -> float:
        answers = decode(model, vocab, val, 256, 5, recipe.device)  # greedy() switches to eval mode and back
        return 100 * sum(a.text == r["answer"] for a, r in zip(answers, val)) / len(val)

    log = open(args.log, "a", encoding="utf-8") if args.log else None
    if log:
        print(f"# {' '.join(sys.argv[1:])}", file=log, flush=True)
    start, losses, tokens, seconds = time.time(), [], 0, 0.0
    flops_per_token = measure_flops(recipe) if recipe.device.type == "cuda" else 0.0

    def report() -> None:
        line = (f"{recipe.iteration:6d} {(time.time() - start) / 60:5.1f} min  loss {sum(losses) / len(losses):.3f}"
                f"  EM {em():.1f}  {tokens / seconds:,.0f} tok/s")
        if flops_per_token:
            mfu = 100 * flops_per_token * tokens / seconds / (args.peak_tflops * 1e12)
            line += f"  peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB  MFU {mfu:.2f}%"
        if recipe.average:
            recipe.average.swap()
            line += f"  EMA {em():.1f}"
            recipe.average.swap()
        print(line, flush=True)
        if log:
            print(line, file=log, flush=True)

    model.train()
    while time.time() - start < 60 * args.minutes:
        step = recipe.train_step()
        losses.append(step.loss)
        tokens, seconds = tokens + step.tokens, seconds + step.seconds
        if recipe.iteration % args.every == 0:
            report()
            losses, tokens, seconds = [], 0, 0.0
    if losses:
        report()  # the last iterations, when the time ran out between reports


def measure_flops(recipe) -> float:
    """Matrix-product and attention FLOPs per input token of one training step (bench/model.py's `step_flops` on
    the next batch), for the MFU estimate. The batch comes from a copy of the data order and the random state
    is restored, so the run is unchanged."""
    import copy

    import torch

    # experiments -> bench edge, kept on purpose: the FLOP count is bench/model.py's, the one the speed pages use
    from bench.model import step_flops
    from mqan.batch import collate

    rows, tokens = copy.deepcopy(recipe.data).next_batch("sst")
    with torch.random.fork_rng(devices=[recipe.device] if recipe.device.type == "cuda" else []):
        flops = step_flops(recipe.model, collate(rows, recipe.vocab, recipe.device), recipe.precision)
    recipe.optimizer.zero_grad(set_to_none=True)
    return flops / tokens


if __name__ == "__main__":
    main()
