"""A reference point for SST without pre-trained vectors: NB-weighted bag-of-bigrams logistic regression.

Features: the set of unigrams and bigrams of each (processed, lowercased, revtok) training sentence,
scaled by naive-Bayes log-count ratios (Wang & Manning 2012), then an L2-regularized logistic regression
fitted with L-BFGS. Prints validation accuracy (= EM of "positive"/"negative") for a few regularization
strengths. Reads the processed SST of the experiments' workdir (bench/workdir.py).

    .venv/bin/python -m experiments.sst_linear_baseline
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def features(tokens: list[str]) -> set[str]:
    words = [t.strip() for t in tokens]
    return set(words) | {f"{a}|{b}" for a, b in zip(words, words[1:])}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    ap.add_argument("--l2", type=float, nargs="*", default=[1e-4, 3e-4, 1e-3])
    args = ap.parse_args()

    import torch

    from train.data import read_share

    processed = Path(args.workdir) / "processed"
    if not (processed / "sst" / "train").is_dir():
        sys.exit(f"no processed SST in {processed}: run `python -m experiments.experiment_sst sst` first")
    splits = {s: read_share(processed, "sst", s).to_pylist() for s in ("train", "validation")}
    index: dict[str, int] = {}
    for row in splits["train"]:
        for f in features(row["context_tokens"]):
            index.setdefault(f, len(index))

    def matrix(rows):
        x = torch.zeros(len(rows), len(index))
        for i, row in enumerate(rows):
            cols = [index[f] for f in features(row["context_tokens"]) if f in index]
            x[i, cols] = 1.0
        return x, torch.tensor([r["answer"] == "positive" for r in rows], dtype=torch.float32)

    x_tr, y_tr = matrix(splits["train"])
    x_va, y_va = matrix(splits["validation"])
    p, q = 1 + x_tr[y_tr == 1].sum(0), 1 + x_tr[y_tr == 0].sum(0)
    r = torch.log((p / p.sum()) / (q / q.sum()))  # NB log-count ratio per feature
    print(f"{len(index):,} unigram+bigram features, {len(y_tr):,} training / {len(y_va):,} validation sentences")
    for l2 in args.l2:
        w = torch.zeros(len(index), requires_grad=True)
        b = torch.zeros(1, requires_grad=True)
        opt = torch.optim.LBFGS([w, b], max_iter=200)

        def closure():
            opt.zero_grad()
            loss = torch.nn.functional.binary_cross_entropy_with_logits((x_tr * r) @ w + b, y_tr) + l2 * (w ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
        with torch.no_grad():
            acc = float((((x_va * r) @ w + b > 0).float() == y_va).float().mean())
        print(f"L2 {l2:g}: validation EM {100 * acc:.1f}")


if __name__ == "__main__":
    main()
