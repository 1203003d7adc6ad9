"""Quick single-process SST runs for comparing settings (the ablations behind the README's SST recipe).

A plain training loop (no Ray, one thread, so two settings can run side by side on 2 cores) over the
processed SST and vocabulary of `experiment_sst.py`'s workdir, with the same data, model, optimizer and
schedule code as `deca train`. Every --every iterations it decodes the full validation split greedily and
prints the EM, and, with --ema, the EM of a moving average of the weights. Lines also go to --log.

    .venv/bin/python bench/sst_ablation.py --minutes 11 --overlay infra/params/from_scratch.yaml
    .venv/bin/python bench/sst_ablation.py --minutes 11 --overlay infra/params/from_scratch.yaml \\
        --set model.char_ngram_dim=0                         # the recipe without char n-grams
    .venv/bin/python bench/sst_ablation.py --minutes 8 --set model.embedding_init_std=1.0   # the old init

Run `experiment_sst.py sst` once first (it prepares the workdir's data and vocabulary).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0, help="training time (default: %(default)s)")
    ap.add_argument("--every", type=int, default=100, help="validate every N iterations (default: %(default)s)")
    ap.add_argument("--ema", type=float, default=0.0, help="also validate a moving average with this decay")
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    ap.add_argument("--overlay", action="append", default=[], metavar="FILE")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--log", help="also append the lines to this file")
    args = ap.parse_args()

    import torch

    import experiment_sst as ex
    from deca.config import load_params
    from train.batch import collate
    from train.cli import parse_overrides
    from train.data import MultiTaskData, read_share, validation_batches
    from train.loop import TRAIN_COLUMNS
    from train.model import build_model
    from train.optim import WeightAverage, build_optimizer, build_scheduler, clip_gradients
    from train.vocab import Vocab

    work = Path(args.workdir)
    if not (work / "processed" / "sst" / "train").is_dir():
        sys.exit(f"no processed SST in {work}: run bench/experiment_sst.py sst first")
    overrides = {"data.processed_dir": str(work / "processed"), "data.vocab_path": str(work / "vocab.txt"),
                 "train.lr": 0.001, "train.warmup": 200, "train.token_budget": 5000,
                 **ex.overlay_overrides(args.overlay), **parse_overrides(args.overrides)}
    params = load_params(ROOT / "params.yaml", overrides=overrides)
    torch.set_num_threads(args.threads)
    tc = params.train
    vocab = Vocab.load(params.data.vocab_path, params.model.max_generative_vocab)
    torch.manual_seed(tc.seed)
    model = build_model(params.model, vocab)
    optimizer = build_optimizer(model.parameters(), tc)
    scheduler = build_scheduler(optimizer, tc)
    average = WeightAverage(model, args.ema) if args.ema else None
    data = MultiTaskData(params.data.processed_dir, ["sst"], tc.token_budget, tc.seed, pool_batches=tc.pool_batches,
                         columns=TRAIN_COLUMNS)
    val = read_share(params.data.processed_dir, "sst", "validation")

    def em() -> float:
        model.eval()
        right = 0
        with torch.no_grad():
            for idx in validation_batches(val, 256):
                rows = val.take(idx).to_pylist()
                right += sum(t == r["answer"] for t, r in zip(model.greedy(collate(rows, vocab), 5).texts, rows))
        model.train()
        return 100 * right / len(val)

    log = open(args.log, "a", encoding="utf-8") if args.log else None
    if log:
        print(f"# {' '.join(sys.argv[1:])}", file=log, flush=True)
    start, it, losses = time.time(), 0, []
    model.train()
    while time.time() - start < 60 * args.minutes:
        rows, _ = data.next_batch("sst")
        loss = model(collate(rows, vocab))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        clip_gradients(model.parameters(), tc.grad_clip)
        optimizer.step()
        scheduler.step()
        if average:
            average.update()
        it += 1
        losses.append(loss.item())
        if it % args.every == 0:
            line = f"{it:6d} {(time.time() - start) / 60:5.1f} min  loss {sum(losses) / len(losses):.3f}  EM {em():.1f}"
            if average:
                average.swap()
                line += f"  EMA {em():.1f}"
                average.swap()
            losses = []
            print(line, flush=True)
            if log:
                print(line, file=log, flush=True)


if __name__ == "__main__":
    main()
