"""Training throughput: a plain single-process loop against Ray Train with 1 and 2 workers, side by side.

All setups train the same model on the same processed data with the same token budget and schedule:
the plain loop and Ray with 1 or 2 workers draw exactly the same global batches (same seed, same data
code); 2 workers each train half of every batch (train/workers.py).
Throughput is measured inside the loop over the second half of the iterations (warm-up excluded):
context+question+answer tokens per second of training-step time, all workers together. The wall time
of each Ray fit also includes Ray's fixed cost (cluster start, worker group, teardown), reported apart.

Data: the real corpora in ../shared/corpora when present (else the bundled miniature fixtures), run
through pipelines.rows.to_row into a temporary processed directory (no Beam).

    .venv/bin/python -m bench.ray_scaling                           # SST, paper model (d=200), 12 iterations
    .venv/bin/python -m bench.ray_scaling --dimension 64 --iterations 40 --tasks sst woz.en
    .venv/bin/python -m bench.ray_scaling --precision bf16 --iterations 24
    .venv/bin/python -m bench.ray_scaling --record docs/results/records/scale/ray_scaling.json

`--record` writes the settings, each setup's figures and the ratios as JSON (bench/record.py).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import tempfile
import time
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import torch

from bench import record
from deca.checks import load_params
from deca.registry import Dropped, get_task
from deca.schema import EXAMPLE_SCHEMA, split_dir
from pipelines.rows import to_row

for _k, _v in {"RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled",
               "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER": "0", "PYTHONHASHSEED": "0"}.items():
    os.environ.setdefault(_k, _v)  # before Ray is imported (in main)

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "corpora"
FIXTURES = ROOT / "tests" / "fixtures" / "corpora"


def build_data(tasks: list[str], out: Path, val_limit: int) -> tuple[Path, Path, str]:
    """Processed Parquet + vocab.txt for `tasks` from the real corpora (or the fixtures)."""
    counts: Counter = Counter()
    sources = set()
    for name in tasks:
        task = get_task(name)
        raw = SHARED if all(p.exists() for s in ("train", "validation") for p in task.files(s, SHARED)) else FIXTURES
        sources.add("real" if raw == SHARED else "fixtures")
        options = task.make_options()
        for split in ("train", "validation"):
            rows = []
            for ex in task.read(split, task.files(split, raw), options):
                if isinstance(ex, Dropped):
                    continue
                row = to_row(task, split, ex, options)
                if not isinstance(row, Dropped):
                    rows.append(row)
                if split == "validation" and len(rows) >= val_limit:
                    break
            d = split_dir(out / "processed", name, split)
            d.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows, schema=EXAMPLE_SCHEMA), d / "part-00000.parquet")
            if split == "train":
                for r in rows:
                    for col in ("context_tokens", "question_tokens", "answer_tokens"):
                        counts.update(r[col])
    vocab = out / "vocab.txt"
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    vocab.write_text("".join(f"{json.dumps(t)}\t{c}\n" for t, c in ranked), encoding="utf-8")
    return out / "processed", vocab, "+".join(sorted(sources))


def plain_loop(params, tasks: list[str], threads: int) -> dict:
    """The training step of `deca train` (train/recipe.py) in this process, without Ray."""
    from train.recipe import local_recipe

    torch.set_num_threads(threads)
    recipe = local_recipe(params, tasks)
    iterations = params.train.iterations
    half = iterations // 2
    tokens = elapsed = 0.0
    start = time.perf_counter()
    while recipe.iteration < iterations:
        step = recipe.train_step()
        if recipe.iteration > half:
            tokens += step.tokens
            elapsed += step.seconds
    return {"wall_s": time.perf_counter() - start, "tokens_per_s": tokens / elapsed,
            "s_per_iteration": elapsed / (iterations - half)}


def ray_fit(params, tasks: list[str], workers: int, project: Path) -> dict:
    from eval.curves import history
    from train.driver import fit

    tc = dataclasses.replace(params.train, num_workers=workers, log_every=params.train.iterations // 2)
    p = dataclasses.replace(params, train=tc)
    start = time.perf_counter()
    outcome = fit(p, run_name=f"bench-{workers}w-{int(time.time())}", progress=False, project=project)
    wall = time.perf_counter() - start
    tps = history(outcome.tracking_uri, outcome.mlflow_run_id, "train/tokens_per_s")["train/tokens_per_s"]
    tokens_per_s = tps[-1][1]  # the second half of the run
    return {"wall_s": wall, "tokens_per_s": tokens_per_s}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", nargs="+", default=["sst"])
    ap.add_argument("--iterations", type=int, default=12)
    ap.add_argument("--budget", type=int, default=None, help="token budget (default: params.yaml)")
    ap.add_argument("--dimension", type=int, default=None, help="model dimension (default: params.yaml)")
    ap.add_argument("--val-examples", type=int, default=8, help="validation examples per task (end of fit)")
    ap.add_argument("--precision", default="fp32", choices=("fp32", "bf16"), help="train.precision (default fp32)")
    ap.add_argument("--record", type=Path, help="write the settings, figures and ratios as JSON here")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING)
    started = record.begin("bench.ray_scaling")

    with tempfile.TemporaryDirectory(prefix="deca-bench-") as tmp:
        tmp = Path(tmp)
        processed, vocab, source = build_data(args.tasks, tmp, args.val_examples)
        params = load_params(ROOT / "params.yaml")
        model = params.model if args.dimension is None else dataclasses.replace(
            params.model, dimension=args.dimension, embedding_dim=args.dimension,
            ff_hidden=min(params.model.ff_hidden, args.dimension))
        train = dataclasses.replace(
            params.train, tasks=args.tasks, strategy="fully_joint", iterations=args.iterations,
            token_budget=args.budget or params.train.token_budget, val_every=0, save_every=0,
            max_val_examples=args.val_examples, storage_dir=str(tmp / "checkpoints"), experiment="bench",
            cpus_per_worker=1.0, precision=args.precision)
        data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
        params = dataclasses.replace(params, model=model, train=train, data=data)
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp}/mlflow.db"
        print(f"data: {args.tasks} ({source}); model d={model.dimension}; budget {train.token_budget}; "
              f"{args.iterations} iterations; {args.precision}; {os.cpu_count()} CPUs", flush=True)

        results = {}
        results["plain loop, 1 thread"] = plain_loop(params, args.tasks, 1)
        results["plain loop, 2 threads"] = plain_loop(params, args.tasks, 2)
        import ray

        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING)
        try:
            results["ray, 1 worker"] = ray_fit(params, args.tasks, 1, tmp)
            results["ray, 2 workers"] = ray_fit(params, args.tasks, 2, tmp)
        finally:
            ray.shutdown()

    config = {"tasks": args.tasks, "iterations": args.iterations, "dimension": model.dimension,
              "precision": args.precision, "budget": train.token_budget, "data": source}
    found = report(results, args.iterations)
    print(json.dumps({"config": config, "results": results}, indent=1))
    if args.record:
        record.write(args.record, started, config, {"results": results, "ratios": found})


def report(results: dict[str, dict], iterations: int) -> dict[str, float]:
    """Add each setup's fixed seconds (wall time beyond its iterations' step time), print the table and the
    ratios; the ratios."""
    base = results["plain loop, 1 thread"]["tokens_per_s"]
    base_it = results["plain loop, 1 thread"]["s_per_iteration"]
    print(f"\n{'setup':24} {'tokens/s':>10} {'vs plain 1t':>12} {'wall s':>8} {'fixed s':>8}")
    for name, r in results.items():
        # the same batches (same token count per iteration) take base_it * base / rate seconds each
        per_it = r.get("s_per_iteration") or base_it * base / r["tokens_per_s"]
        r["fixed_s"] = r["wall_s"] - iterations * per_it  # start-up, warm-up, teardown, final validation
        print(f"{name:24} {r['tokens_per_s']:10.0f} {r['tokens_per_s'] / base:11.2f}x {r['wall_s']:8.1f} "
              f"{r['fixed_s']:8.1f}")
    found = ratios(results)
    print(f"\nRay per-step overhead (1 worker vs plain loop, 1 thread): "
          f"{100 * (found['time_per_token_ray1_vs_plain1'] - 1):+.1f}% time per token")
    print(f"scaling 1 -> 2 workers: {found['ray2_vs_ray1']:.2f}x tokens/s")
    print(f"ray, 2 workers vs the best plain loop (the machine's ceiling): {found['ray2_vs_best_plain']:.2f}x")
    return found


def ratios(results: dict[str, dict]) -> dict[str, float]:
    """Tokens/s ratios: each setup against the 1-thread plain loop, 2 workers against 1, 2 threads against 1,
    2 workers against the better plain loop; and Ray's time per token against the 1-thread plain loop."""
    rate = {name: r["tokens_per_s"] for name, r in results.items()}
    base, r1, r2 = rate["plain loop, 1 thread"], rate["ray, 1 worker"], rate["ray, 2 workers"]
    out = {f"{name} vs plain loop, 1 thread": v / base for name, v in rate.items()}
    out.update({"time_per_token_ray1_vs_plain1": base / r1, "ray2_vs_ray1": r2 / r1,
                "plain2_vs_plain1": rate["plain loop, 2 threads"] / base,
                "ray2_vs_best_plain": r2 / max(base, rate["plain loop, 2 threads"])})
    return out


if __name__ == "__main__":
    main()
