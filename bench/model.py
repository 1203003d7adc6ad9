"""Throughput of MQAN in the paper configuration on real SQuAD dev and SST batches.

Training steps (forward, backward, Adam) on batches cut by the paper's token budget
(sum over the batch of len(c) + len(q) + 5 len(a) <= budget), and greedy decoding of 256-example
batches with and without incremental state (cached decoder keys/values vs recomputing the prefix),
side by side. Like the reference measurement of the original (spec §9): random frozen 400-d
embeddings in place of GloVe + char n-grams, a 50,000-token generative vocabulary (the data's
tokens by frequency, then filler tokens), EOS suppressed while decoding so every batch runs the
same number of steps.

    .venv/bin/python bench/model.py                 # defaults: 3 timed steps after 1 warm-up
    .venv/bin/python bench/model.py --steps 10 --threads 2
    .venv/bin/python bench/model.py --phases        # where the time goes (each phase's share)
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

from deca.config import ModelConfig
from deca.text import normalize_space, tokenize
from train.mqan.allocator import keep_large_blocks
from train.mqan.batch import collate
from train.mqan.model import build_model, count_parameters
from train.mqan.vectors import VectorSource
from train.mqan.vocab import EOS_ID, Vocab

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpora"
# The original implementation on these machines (spec decanlp-reference.md §9, 2 threads):
# examples/s, peak RSS GB. Speed-ups compare examples/s (batches cut by the same budget differ in size).
ORIGINAL = {("train", "squad"): (9.3, 3.2), ("train", "sst"): (66.6, 3.9), ("decode", "sst"): (27.0, 1.2),
            ("decode", "squad"): (13.4, 2.7)}
ORIGINAL_DECODE_STEPS = 50  # §9 decoded 50 forced steps


def _row(context: str, question: str, answer: str) -> dict:
    c, q, a = (normalize_space(x).lower() for x in (context, question, answer))
    return {"context_tokens": tokenize(c), "question_tokens": tokenize(q), "answer_tokens": tokenize(a)}


def read_task(name: str, split: str, raw: Path, limit: int, seed: int) -> list[dict]:
    """Up to `limit` random examples of a task split as token rows: via the task registry when the task is
    registered (deca.tasks), else by parsing the official SQuAD JSON / SST CSV directly."""
    from deca.registry import Dropped, all_tasks

    task = all_tasks().get(name)
    if task is not None:
        examples = [e for e in task.read(split, task.files(split, raw), task.make_options()) if not isinstance(e, Dropped)]
        triples = [(e.context, e.question, e.answer) for e in examples]
    elif name == "squad":
        data = json.loads((raw / "squad" / "dev-v1.1.json").read_text(encoding="utf-8"))["data"]
        triples = [(p["context"], qa["question"], qa["answers"][0]["text"])
                   for art in data for p in art["paragraphs"] for qa in p["qas"]]
    else:
        import csv

        f = {"train": "train", "validation": "dev"}[split]
        with open(raw / "sst" / f"{f}_binary_sent.csv", encoding="utf-8", newline="") as fh:
            rows = list(csv.reader(fh))[1:]
        triples = [(r[-1], "Is this review negative or positive?", ["negative", "positive"][int(r[0])]) for r in rows]
    random.Random(seed).shuffle(triples)
    return [_row(*t) for t in triples[:limit]]


def cost(r: dict) -> int:
    return len(r["context_tokens"]) + len(r["question_tokens"]) + 5 * len(r["answer_tokens"])


def budget_batches(rows: list[dict], budget: int) -> list[list[dict]]:
    """Sort by length (as the bucketing pools do), then cut consecutive batches within the budget."""
    rows = sorted(rows, key=lambda r: (len(r["context_tokens"]), len(r["answer_tokens"])))
    batches, cur, total = [], [], 0
    for r in rows:
        if cur and total + cost(r) > budget:
            batches.append(cur)
            cur, total = [], 0
        cur.append(r)
        total += cost(r)
    return batches + ([cur] if cur else [])


def middle(rows: list[dict], n: int) -> list[dict]:
    """The `n` rows around the median context length: validation batches come from length-sorted data."""
    rows = sorted(rows, key=lambda r: len(r["context_tokens"]))
    start = max(0, (len(rows) - n) // 2)
    return rows[start:start + n]


def make_vocab(rows: list[dict], size: int) -> Vocab:
    counts = Counter(t for r in rows for k in ("context_tokens", "question_tokens", "answer_tokens") for t in r[k])
    tokens = [t for t, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][: size - 4]
    tokens += [f"<filler {i}>" for i in range(size - 4 - len(tokens))]
    return Vocab.from_tokens(tokens, size)


def peak_rss_gb() -> float:
    """Peak resident memory of the process so far. Phases run from the lightest (decoding SST) to the
    heaviest (training), so each phase's figure bounds its own peak from above."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def bench_train(model, batches, vocab, steps: int, warmup: int) -> dict:
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    rng = random.Random(0)
    picked = [rng.choice(batches) for _ in range(steps + warmup)]  # batches of every length, as training sees
    times, examples, tokens, ctx, ctx_pad = [], 0, 0, [], []
    for i, rows in enumerate(picked):
        b = collate(rows, vocab)
        t0 = time.perf_counter()
        loss = model(b)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
            examples += b.size
            tokens += b.answer_tokens
            ctx.append(float(b.context.lengths.float().mean()))
            ctx_pad.append(b.context.ext.shape[1])
    t = sum(times)
    return {"s/step": t / len(times), "examples/s": examples / t, "answer tok/s": tokens / t,
            "examples/batch": examples / len(times), "ctx mean": sum(ctx) / len(ctx),
            "ctx padded": sum(ctx_pad) / len(ctx_pad), "peak RSS GB": peak_rss_gb()}


def bench_decode(model, rows, vocab, steps: int, incremental: bool, warmup: bool = False) -> tuple[dict, list]:
    """One timed greedy decoding of `rows` (after an untimed one with `warmup`, as §9 warmed up the original)."""
    b = collate(rows, vocab)
    if warmup:
        model.greedy(b, max_len=steps, incremental=incremental)
    t0 = time.perf_counter()
    out = model.greedy(b, max_len=steps, incremental=incremental)
    t = time.perf_counter() - t0
    return {"s/step": t, "examples/s": b.size / t, "answer tok/s": b.size * out.ids.shape[1] / t,
            "examples/batch": b.size, "ctx mean": float(b.context.lengths.float().mean()),
            "ctx padded": b.context.ext.shape[1], "peak RSS GB": peak_rss_gb()}, out.tokens


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


def train_phases(model, batches, vocab, steps: int) -> dict[str, float]:
    """Seconds per training step in each phase (forward: encoder, decoder and loss; backward; clipping and
    Adam), after one untimed step."""
    opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98), eps=1e-9)
    model.train()
    rng, acc = random.Random(0), Counter()
    for i in range(steps + 1):
        b = collate(rng.choice(batches), vocab)
        timer = PhaseTimer(model)
        t0 = time.perf_counter()
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


def decode_phases(model, rows, vocab, steps: int) -> dict[str, float]:
    """Seconds of one greedy decoding of `rows` (`steps` forced steps) in each phase: the encoder, the
    vocabulary projection W_v c~_t, the rest; after one untimed decoding of the same batch."""
    b = collate(rows, vocab)
    model.eval()
    with torch.inference_mode():
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
        phases = train_phases(model, budget_batches(data[task], args.budget), vocab, args.steps)
        total = sum(phases.values())
        print(f"  train step, {task}: {total:.2f} s; "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in phases.items()))
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4
    for task in ("sst", "squad"):
        phases = decode_phases(model, decode_rows[task], vocab, args.decode_steps)
        total = sum(phases.values())
        print(f"  greedy, {task}, {args.decode_steps} steps: {total:.2f} s; "
              + ", ".join(f"{k} {100 * v / total:.0f}%" for k, v in phases.items()))
    print_projection_bound(model, args)


def print_projection_bound(model, args) -> None:
    """The most greedy decoding could gain over the original if everything but the vocabulary projection
    were free: the original's seconds per batch (§9, 50 steps, scaled to `--decode-steps`) over as many
    products W_v c~_t alone."""
    x = torch.randn(args.decode_batch, model.out.in_features)
    with torch.inference_mode():
        model.out(x)
        t0 = time.perf_counter()
        for _ in range(args.decode_steps):
            model.out(x)
        t = time.perf_counter() - t0
    share = args.decode_steps / ORIGINAL_DECODE_STEPS  # the original's time, scaled to this many steps
    bounds = ", ".join(f"{task} x{share * args.decode_batch / ORIGINAL[('decode', task)][0] / t:.1f}"
                       for task in ("sst", "squad"))
    print(f"  the vocabulary projection alone, [{args.decode_batch}, {model.out.in_features}] x "
          f"[{model.out.in_features}, {model.out.out_features:,}] {args.decode_steps} times: {t:.2f} s; the most "
          f"decoding could reach against the original with everything else free: {bounds}")


def model_config(args, head_dim: int | None) -> ModelConfig:
    """The benchmarked configuration: params.yaml's model with §9's inputs (frozen random 400-d vectors only)."""
    return ModelConfig(variant=args.variant, head_dim=head_dim, word_vectors=None, char_ngram_dim=0, embedding_dim=0,
                       recompute_encoder=args.recompute_encoder)


def bench_config(args, head_dim: int | None, vocab: Vocab, vectors: VectorSource, data: dict,
                 decode_rows: dict) -> list:
    """Training steps and greedy decoding of one model configuration: [(label, original key, result)]."""
    torch.manual_seed(args.seed)
    cfg = model_config(args, head_dim)
    model = build_model(cfg, vocab, word_vectors=vectors)
    name = f"heads {cfg.heads} x {head_dim or cfg.dimension}" + (", recompute encoder" if cfg.recompute_encoder else "")
    print(f"{cfg.variant}, {name}: {count_parameters(model):,} trainable parameters; generative vocabulary "
          f"{vocab.generative_size:,}; {args.threads} threads", flush=True)
    results = []
    bias = model.out.bias[EOS_ID].item()
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4  # never stop early: every batch runs --decode-steps steps
    for task in ("sst", "squad"):
        inc, toks_inc = bench_decode(model, decode_rows[task], vocab, args.decode_steps, incremental=True, warmup=True)
        full, toks_full = bench_decode(model, decode_rows[task], vocab, args.decode_steps, incremental=False)
        same = "same outputs" if toks_inc == toks_full else "OUTPUTS DIFFER"
        results.append((f"{name}: greedy, {task} dev, incremental", ("decode", task), inc))
        results.append((f"{name}: greedy, {task} dev, recompute prefix ({same})", None, full))
        print(f"  decoding {task}: incremental {inc['s/step']:.2f} s, recomputing {full['s/step']:.2f} s "
              f"(x{full['s/step'] / inc['s/step']:.2f}); {same}", flush=True)
    with torch.no_grad():
        model.out.bias[EOS_ID] = bias
    for task in ("squad", "sst"):
        r = bench_train(model, budget_batches(data[task], args.budget), vocab, args.steps, args.warmup)
        results.append((f"{name}: train step, {task}, budget {args.budget}", ("train", task), r))
        print(f"  {results[-1][0]}: {r['s/step']:.2f} s/step", flush=True)
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=3, help="timed training steps per task (default 3)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed warm-up steps per task (default 1)")
    ap.add_argument("--budget", type=int, default=10000, help="token budget per batch (paper: 10000)")
    ap.add_argument("--decode-batch", type=int, default=256, help="examples per decoding batch (default 256)")
    ap.add_argument("--decode-steps", type=int, default=50, help="greedy steps, EOS suppressed (default 50)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads (default 2)")
    ap.add_argument("--variant", default="mqan", help="model variant (default mqan)")
    ap.add_argument("--head-dim", type=int, default=None,
                    help="only this attention head size, 0 for d (default: both d, the paper and params.yaml, and "
                         "67, the original's head size, one after the other, each in its own process)")
    ap.add_argument("--recompute-encoder", action="store_true",
                    help="model.recompute_encoder: rerun the encoder arms in the backward pass (memory for time)")
    ap.add_argument("--default-malloc", action="store_true",
                    help="leave glibc's malloc thresholds as they are (train/mqan/allocator.py), to measure their effect")
    ap.add_argument("--phases", action="store_true",
                    help="instead of the table: where the time of a training step and of greedy decoding goes")
    ap.add_argument("--raw", type=Path, default=SHARED, help=f"corpora mirror (default {SHARED})")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.head_dim is None:  # each configuration in its own process: its peak memory is its own
        for head_dim in (0, 67):
            subprocess.run([sys.executable, __file__, *(argv or sys.argv[1:]), "--head-dim", str(head_dim)],
                           check=True)
        return 0
    if not args.default_malloc:
        keep_large_blocks()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    if not (args.raw / "squad" / "dev-v1.1.json").exists():
        ap.error(f"SQuAD dev not found under {args.raw}; pass --raw <mirror of the corpora>")

    print("reading and tokenizing SQuAD dev and SST ...", flush=True)
    data = {"squad": read_task("squad", "validation", args.raw, 3000, args.seed),
            "sst": read_task("sst", "train", args.raw, 3000, args.seed)}
    decode_rows = {"sst": middle(read_task("sst", "validation", args.raw, 10**6, args.seed), args.decode_batch),
                   "squad": middle(data["squad"], args.decode_batch)}
    vocab = make_vocab([r for rows in data.values() for r in rows], 50000)
    vectors = VectorSource.from_arrays("random-400", [t.strip() for t in vocab.itos],
                                       torch.randn(len(vocab), 400).numpy())
    if args.phases:
        cfg = model_config(args, args.head_dim or None)
        print(f"where the time goes, heads {cfg.heads} x {args.head_dim or cfg.dimension}, {args.threads} threads:")
        print_phases(build_model(cfg, vocab, word_vectors=vectors), data, decode_rows, vocab, args)
        return 0
    results = bench_config(args, args.head_dim or None, vocab, vectors, data, decode_rows)
    cols = ["examples/batch", "ctx mean", "ctx padded", "s/step", "examples/s", "answer tok/s", "peak RSS GB"]
    print("\n| phase | " + " | ".join(cols) + " | original examples/s, peak RSS (§9) | speed-up vs original "
          "(examples/s) | memory vs original |")
    print("|" + "---|" * (len(cols) + 4))
    for name, key, r in results:
        ref = ORIGINAL.get(key) if key else None
        extra = (f"{ref[0]:.1f}, {ref[1]:.1f} GB | x{r['examples/s'] / ref[0]:.2f} | {r['peak RSS GB'] / ref[1]:.2f}"
                 if ref else "- | - | -")
        print(f"| {name} | " + " | ".join(f"{r[c]:.1f}" if c != "peak RSS GB" else f"{r[c]:.2f}" for c in cols)
              + f" | {extra} |")
    print("\n(s/step for decoding = seconds per batch; the original's numbers are quoted from the reference notes"
          " §9, measured on these machines with 2 threads, 3 warm-up + 20 timed steps.)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
