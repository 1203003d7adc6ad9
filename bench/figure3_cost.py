"""What Figure 3 costs `deca evaluate`: greedy decoding of real validation examples with a trained checkpoint,
texts only (before), with the source weights (`deca evaluate` now: mqan.decode.decode(weights=True))
and with the per-source probabilities too (`deca predict`: explain=True), side by side.

The three ways run in turn on the same batches (after a warm-up batch, in a rotating order), `--repeats`
times; the least CPU time of each is kept (one thread; CPU time, since the machine is shared). Their answers must be identical (the weights are read from what greedy decoding computes anyway).

    .venv/bin/python -m bench.figure3_cost \\
        --checkpoint checkpoints/readme-experiment/checkpoints/fully-joint-20261123-145101/best/model.pt \\
        --processed checkpoints/readme-experiment/processed --vocab checkpoints/readme-experiment/vocab.txt
"""
from __future__ import annotations

import argparse
import time

import torch

from eval.sources import summarize
from mqan.checkpoint import load_model
from infer.evaluate import read_rows
from mqan.decode import decode

MODES = {"texts only": {}, "weights (evaluate)": {"weights": True}, "explain (predict)": {"explain": True}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--processed", required=True)
    ap.add_argument("--vocab", default=None, help="for a checkpoint without its vocabulary (format 2)")
    ap.add_argument("--tasks", nargs="+", default=["sst", "woz.en", "srl"])
    ap.add_argument("--examples", type=int, default=256, help="first N validation examples of each task")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device("cpu")
    model, vocab, _ = load_model(args.checkpoint, args.vocab, device)
    print(f"{'task':<8} {'examples':>8} " + " ".join(f"{m:>19}" for m in MODES) + "   weights/texts  explain/texts")
    for task in args.tasks:
        rows = read_rows(args.processed, task, "validation", args.examples)
        best = {m: float("inf") for m in MODES}
        answers = {}
        decode(model, vocab, rows[: args.batch_size], args.batch_size, None, device)  # warm-up
        modes = list(MODES.items())
        for r in range(args.repeats):
            for mode, kw in modes[r % 3:] + modes[: r % 3]:  # a different order each round
                start = time.process_time()  # CPU seconds: the machine is shared, wall time says little
                answers[mode] = decode(model, vocab, rows, args.batch_size, None, device, **kw)
                best[mode] = min(best[mode], time.process_time() - start)
        texts = {m: [a.text for a in out] for m, out in answers.items()}
        assert len({tuple(t) for t in texts.values()}) == 1, f"{task}: the modes decode different answers"
        assert answers["weights (evaluate)"][0].weights == answers["explain (predict)"][0].weights
        share = summarize([a.weights for a in answers["weights (evaluate)"]])["share"]
        base = best["texts only"]
        print(f"{task:<8} {len(rows):>8} " + " ".join(f"{best[m]:>16.2f}cpu" for m in MODES)
              + f"   {best['weights (evaluate)'] / base:>12.3f}x  {best['explain (predict)'] / base:>12.3f}x"
              + "   (" + "/".join(f"{v:.0f}" for v in share.values()) + "% vocabulary/context/question)")


if __name__ == "__main__":
    main()
