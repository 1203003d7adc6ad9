"""Quick single-process SST runs for comparing settings (the ablations behind the README's SST recipe).

A plain training loop (no Ray, one thread, so two settings can run side by side on 2 cores) over the
processed SST and vocabulary of `experiment_sst.py`'s workdir, training with `deca train`'s own step
(train/recipe.py, in-process). Every --every iterations it decodes the full validation split greedily and
prints the EM, and, with --ema (train.ema_decay), the EM of the moving average of the weights. Lines also
go to --log.

    .venv/bin/python experiments/sst_ablation.py --minutes 11 --overlay infra/params/from_scratch.yaml
    .venv/bin/python experiments/sst_ablation.py --minutes 11 --overlay infra/params/from_scratch.yaml \\
        --set model.char_ngram_dim=0                         # the recipe without char n-grams
    .venv/bin/python experiments/sst_ablation.py --minutes 8 --set model.embedding_init_std=1.0   # the old init

Run `experiment_sst.py sst` once first (it prepares the workdir's data and vocabulary).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
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
    args = ap.parse_args()

    import torch

    import experiment_sst as ex
    from deca.config import load_params, parse_overrides
    from train.data import read_share
    from train.mqan.decode import decode
    from train.recipe import local_recipe

    work = Path(args.workdir)
    if not (work / "processed" / "sst" / "train").is_dir():
        sys.exit(f"no processed SST in {work}: run experiments/experiment_sst.py sst first")
    overrides = {"data.processed_dir": str(work / "processed"), "data.vocab_path": str(work / "vocab.txt"),
                 "train.lr": 0.001, "train.warmup": 200, "train.token_budget": 5000,
                 **ex.overlay_overrides(args.overlay), "train.ema_decay": args.ema, **parse_overrides(args.overrides)}
    params = load_params(ROOT / "params.yaml", overrides=overrides)
    torch.set_num_threads(args.threads)
    recipe = local_recipe(params, ["sst"])
    model, vocab = recipe.core, recipe.vocab
    val = read_share(params.data.processed_dir, "sst", "validation").to_pylist()

    def em() -> float:
        answers = decode(model, vocab, val, 256, 5, recipe.device)  # greedy() switches to eval mode and back
        return 100 * sum(a.text == r["answer"] for a, r in zip(answers, val)) / len(val)

    log = open(args.log, "a", encoding="utf-8") if args.log else None
    if log:
        print(f"# {' '.join(sys.argv[1:])}", file=log, flush=True)
    start, losses = time.time(), []
    model.train()
    while time.time() - start < 60 * args.minutes:
        losses.append(recipe.train_step().loss)
        it = recipe.iteration
        if it % args.every == 0:
            line = f"{it:6d} {(time.time() - start) / 60:5.1f} min  loss {sum(losses) / len(losses):.3f}  EM {em():.1f}"
            if recipe.average:
                recipe.average.swap()
                line += f"  EMA {em():.1f}"
                recipe.average.swap()
            losses = []
            print(line, flush=True)
            if log:
                print(line, file=log, flush=True)

if __name__ == "__main__":
    main()
