"""Share of validation tokens that reach the encoder without their identity, per task, before and after
inputs were featurized from token strings (mqan/inputs.py).

Before: the input vocabulary was data/vocab.txt (any other token read as the featureless UNK), and trained
word vectors covered only the generative vocabulary (the from_scratch recipe: 6,000), so rarer tokens
shared the UNK vector. After: measured by running the model's own input layer on collated validation
batches and comparing each token's frozen features with its vector in the source: the share of tokens
that have a vector but do not get it (target 0%), and the share that have none (they still get their own
char n-gram features).

    .venv/bin/python -m experiments.input_coverage --processed checkpoints/readme-experiment/processed \\
        --vocab checkpoints/readme-experiment/vocab.txt
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from deca.config import ModelConfig
from deca.schema import iter_rows
from mqan.batch import collate
from mqan.model import build_model
from mqan.vocab import Vocab

ROOT = Path(__file__).resolve().parents[1]


def coverage(rows: list[dict], vocab: Vocab, model, small_generative: int, batch_size: int = 256) -> dict:
    """Counts over the context and question tokens of `rows` (and gold answers with an unknown token)."""
    source = model.embed.featurizer.word
    n = before_unk = before_shared = has_vec = missed = 0
    answers_unk = 0
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        batch = collate(chunk, vocab)
        feats = model.embed.batch_features(batch.oov_tokens, "cpu")
        for seq, key in ((batch.context, "context_tokens"), (batch.question, "question_tokens")):
            with torch.no_grad():
                got = model.embed(seq.ext, feats)[..., model.embed.featurizer.frozen_dim - source.dim:
                                                  model.embed.featurizer.frozen_dim]
            for i, r in enumerate(chunk):
                toks = list(r[key] or [])
                if not toks:
                    continue
                want = torch.from_numpy(source.lookup([t.strip() for t in toks]))
                has = want.abs().sum(-1) > 0
                n += len(toks)
                has_vec += int(has.sum())
                missed += int((has & ~(got[i, : len(toks)] == want).all(-1)).sum())
                ids = [vocab.stoi.get(t) for t in toks]
                before_unk += sum(j is None for j in ids)
                before_shared += sum(j is None or j >= small_generative for j in ids)
        answers_unk += sum(any(t not in vocab.stoi for t in (r["answer_tokens"] or [])) for r in chunk)
    return {"tokens": n, "before: not in vocab.txt (UNK) %": 100 * before_unk / n,
            f"before: outside {small_generative:,} generative (UNK vector) %": 100 * before_shared / n,
            "after: have a vector but do not get it %": 100 * missed / n,
            "after: no vector (char n-grams only) %": 100 * (n - has_vec) / n,
            "gold answers with a token not in vocab.txt %": 100 * answers_unk / len(rows)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--processed", type=Path, default=ROOT / "checkpoints" / "readme-experiment" / "processed")
    ap.add_argument("--vocab", type=Path, default=ROOT / "checkpoints" / "readme-experiment" / "vocab.txt")
    ap.add_argument("--tasks", nargs="+", default=["sst", "woz.en", "srl", "schema"])
    ap.add_argument("--split", default="validation")
    ap.add_argument("--vectors", default="glove-6b-50d", help="vector source (default: %(default)s)")
    ap.add_argument("--small-generative", type=int, default=6000, help="the from_scratch recipe's generative size")
    args = ap.parse_args(argv)
    vocab = Vocab.load(args.vocab, 50000)
    cfg = ModelConfig(word_vectors=args.vectors, char_ngram_dim=8, dimension=8, ff_hidden=8, heads=1)
    model = build_model(cfg, vocab).eval()
    print(f"vocabulary {len(vocab) - 4:,} tokens ({args.vocab}); vectors {args.vectors}")
    results = {t: coverage(list(iter_rows(args.processed, t, args.split)), vocab, model, args.small_generative)
               for t in args.tasks}
    cols = list(next(iter(results.values())))
    print("\n| task | " + " | ".join(cols) + " |")
    print("|---|" + "---|" * len(cols))
    for t, r in results.items():
        print(f"| {t} | " + " | ".join(f"{r[c]:,}" if c == "tokens" else f"{r[c]:.2f}" for c in cols) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
