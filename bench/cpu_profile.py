"""Where a CPU training step and a greedy decoding spend their time, by operator: torch.profiler's
`key_averages` table (top operators by self CPU time) of one SQuAD- and one SST-shaped training step, and of
greedy decoding of 256 SQuAD and SST rows (50 steps, EOS suppressed), on bench/model.py's model and
bench/batches.py's batches. Each file starts with the command, the commit, the date, the CPU and the load
before and after.

    python -m bench.cpu_profile --raw ../shared/corpora    # docs/results/profiles/cpu_train.txt, cpu_decode.txt

A loaded machine stretches every operator; the shares, not the seconds, are what the tables say.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from bench import record
from bench.batches import SHARED, budget_batches, make_vocab, middle, read_task
from bench.speedcheck_case import harness_optimizer, model_config, optimizer_step
from mqan.allocator import keep_large_blocks
from mqan.batch import collate
from mqan.model import build_model
from mqan.precision import TRAINING, autocast, limit_kernel_cache, resolve
from mqan.vectors import VectorSource
from mqan.vocab import EOS_ID

OUT = Path(__file__).resolve().parents[1] / "docs" / "results" / "profiles"


def table(fn, rows: int) -> str:
    """Run `fn` once untimed, then once under the profiler: its operators by self CPU time."""
    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        fn()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows, max_name_column_width=60)


def train_tables(model, data: dict, vocab, args) -> list[str]:
    opt = harness_optimizer(model)
    model.train()
    out = []
    for task in ("squad", "sst"):
        rows = random.Random(args.seed).choice(budget_batches(data[task], args.budget))
        b = collate(rows, vocab)
        out.append(f"## training step, {task}: {b.size} examples, context padded to {b.context.ext.shape[1]}, "
                   f"budget {args.budget} (forward, backward, clip_grad_norm, Adam)\n\n"
                   + table(lambda: optimizer_step(model, opt, b, torch.device("cpu"), args.precision), args.rows))
    return out


def decode_tables(model, rows: dict, vocab, args) -> list[str]:
    with torch.no_grad():
        model.out.bias[EOS_ID] = -1e4  # every row runs --decode-steps steps
    out = []
    for task in ("squad", "sst"):
        b = collate(rows[task], vocab)
        with torch.inference_mode(), autocast(torch.device("cpu"), args.precision):
            text = table(lambda: model.greedy(b, max_len=args.decode_steps), args.rows)
        out.append(f"## greedy decoding, {task}: {b.size} examples, context padded to {b.context.ext.shape[1]}, "
                   f"{args.decode_steps} steps\n\n" + text)
    return out


def header(started: dict, precision: str) -> str:
    m = started["machine"]
    return (f"command: {started['command']}\ncommit: {started['commit']}\ndate: {started['date']}\n"
            f"cpu: {m['cpu']}, {m['cores']} cores, bf16 units: {m['bf16_units']}; torch {torch.__version__}, "
            f"{torch.get_num_threads()} threads, {precision}\nload before: {started['load_before']}; after: {record.load()}\n\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", type=Path, default=SHARED, help="corpora mirror")
    ap.add_argument("--out", type=Path, default=OUT, help="folder of cpu_train.txt and cpu_decode.txt")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--budget", type=int, default=10000)
    ap.add_argument("--decode-steps", type=int, default=50)
    ap.add_argument("--rows", type=int, default=30, help="operators per table")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--precision", choices=TRAINING, default="fp32",
                    help="bf16: autocast as train.precision runs it (needs bf16 units: mqan/precision.py)")
    args = ap.parse_args()
    args.precision = resolve(args.precision, torch.device("cpu"), "--precision")  # fp32, said, without bf16 units
    keep_large_blocks()
    limit_kernel_cache()  # as train.precision does on a CPU (mqan/precision.py)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    started = record.begin("bench.cpu_profile")
    data = {"squad": read_task("squad", "validation", args.raw, 3000, args.seed),
            "sst": read_task("sst", "train", args.raw, 3000, args.seed)}
    rows = {"sst": middle(read_task("sst", "validation", args.raw, 10**6, args.seed), 256),
            "squad": middle(data["squad"], 256)}
    vocab = make_vocab([r for task in data.values() for r in task], 50000)
    vectors = VectorSource.from_arrays("random-400", [t.strip() for t in vocab.itos], torch.randn(len(vocab), 400).numpy())
    model = build_model(model_config(argparse.Namespace(variant="mqan", recompute_encoder=False), None), vocab,
                        word_vectors=vectors)
    train, decode = train_tables(model, data, vocab, args), decode_tables(model, rows, vocab, args)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, tables in (("cpu_train.txt", train), ("cpu_decode.txt", decode)):
        (args.out / name).write_text(header(started, args.precision) + "\n\n".join(tables) + "\n", encoding="utf-8")
        print(f"wrote {args.out / name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
