"""Benchmark: `deca prepare` and the training data loader at 1x, 4x and 16x of a base corpus size (issue 15).

    .venv/bin/python -m bench.scale [--base 0.02] [--multiples 1,4,16] [--work /tmp/deca-scale]
                                    [--beam-args="--direct_num_workers=2 --direct_running_mode=multi_processing"]
                                    [--dask-workers 2]

For each size, `bench/synth_corpora.py` writes synthetic SQuAD, CNN/Daily Mail, MultiNLI and QA-ZRE in
their official formats at `base x multiple` of the paper's Table 1 sizes (1x = 2% by default), then:

- prepare <task>: `deca prepare --tasks <task> --mirror ...`, one run per task as the DVC stages
  prepare@<task> run it (the repository's params.yaml: SQuAD's 400-token filter, CNN's 400-token cut);
- vocab: `deca prepare --vocab` over the four prepared training splits;
- with --dask-workers N, each of those again on the DaskRunner (rows "... dask N"): `--runner=DaskRunner
  --dask_local_workers=N`, a local Dask cluster of N one-thread worker processes that each command starts
  and stops (included in its time; its workers are in the measured process tree);
- loader: one training worker's data (`train.data.MultiTaskData` over the four tasks, the columns and
  token budget training uses), then one epoch of every task's batches as rows (`next_batch`).

Each step runs in its own process tree; its wall time and peak memory are measured from outside: the
peak of the tree's summed RSS (polled every 50 ms), of its anonymous part (RSS less file-backed pages:
libraries and memory-mapped data, page cache the OS can drop) and the peak RSS of the largest process
(the kernel's maxrss from wait4). The table gives examples/s and the ratios to 1x; the last lines
extrapolate time and memory (linear fits over the sizes) to the full Table 1 size and to the whole
decathlon. `--multiples 50` measures the full size itself (2.5 GB of corpora under --work). Nothing is
asserted: the machine may be shared (the load average is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
from bench import synth_corpora as synth

BIN = ROOT / ".venv" / "bin"
TASKS = synth.TASKS  # corpus -> task
STEPS = ("prepare", "vocab", "loader")
# Table 1 training examples of the six tasks not generated here; estimated at MultiNLI's measured cost per
# example (all are sentence-level: a sentence or two of context, a short answer).
OTHER_TRAIN = {"iwslt.en.de": 196884, "wikisql": 56355, "sst": 6920, "srl": 6414, "woz.en": 2536, "schema": 80}


def tree_rss(pid: int) -> tuple[int, int]:
    """(RSS, anonymous RSS) in bytes summed over a process and its descendants ((0, 0) when it is gone).
    Anonymous = RSS less file-backed pages (libraries, memory-mapped files: page cache the OS can drop)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        procs = [proc] + proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0, 0
    rss = anon = 0
    for p in procs:
        try:
            info = p.memory_info()
        except psutil.NoSuchProcess:
            continue
        rss, anon = rss + info.rss, anon + info.rss - info.shared
    return rss, anon


def measure(cmd: list[str], cwd: Path, timeout: float) -> dict:
    """Run `cmd`; wall seconds, peak tree RSS (polled) and the largest process's maxrss, in MiB, and stdout."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONHASHSEED": "0"})
    outputs: dict[str, str] = {}
    readers = [threading.Thread(target=lambda n=n, s=s: outputs.__setitem__(n, s.read()), daemon=True)
               for n, s in (("stdout", proc.stdout), ("stderr", proc.stderr))]
    for t in readers:
        t.start()
    peak, peak_anon, pid = 0, 0, 0
    try:
        while not pid:
            rss, anon = tree_rss(proc.pid)
            peak, peak_anon = max(peak, rss), max(peak_anon, anon)
            if time.perf_counter() - start > timeout:
                raise SystemExit(f"error: timed out after {timeout:.0f} s: {shlex.join(cmd)}")
            time.sleep(0.05)
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    finally:
        if not pid:  # timed out or interrupted: end the whole tree it started
            os.killpg(proc.pid, 9)
            proc.wait()
    seconds = time.perf_counter() - start
    for t in readers:
        t.join()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"error: {shlex.join(cmd)} failed ({code}):\n{outputs.get('stderr', '')[-3000:]}")
    return {"seconds": seconds, "tree_mb": peak / 2**20, "anon_mb": peak_anon / 2**20,
            "proc_mb": usage.ru_maxrss / 1024,
            "stdout": outputs.get("stdout", "")}


def loader_child(processed: str, tasks: list[str], budget: int, seed: int) -> None:
    """Build one worker's training data as `deca train` does and read one epoch of every task (prints JSON)."""
    import resource

    from train.data import MultiTaskData
    from train.recipe import TRAIN_COLUMNS

    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    data = MultiTaskData(processed, tasks, budget, seed, columns=TRAIN_COLUMNS)
    loaded = time.perf_counter() - t0
    batches = rows = 0
    for task in tasks:
        for _ in range(len(data.tasks[task].stream.plan(0))):
            batch, _tokens = data.next_batch(task)
            batches, rows = batches + 1, rows + len(batch)
    print(json.dumps({"import_mb": base, "load_s": loaded, "epoch_s": time.perf_counter() - t0 - loaded,
                      "batches": batches, "rows": rows, "examples": sum(data.num_examples().values())}))


def generate(work: Path, fraction: float, seed: int) -> Path:
    """The synthetic mirror of one size under `work` (written once; reused while its fraction is the same)."""
    mirror, marker = work / "mirror", work / "generated.json"
    if not (marker.exists() and json.loads(marker.read_text()).get("fraction") == fraction):
        import shutil

        shutil.rmtree(work, ignore_errors=True)
        t0 = time.perf_counter()
        written = synth.write_all(mirror, fraction, seed)
        marker.write_text(json.dumps({"fraction": fraction, "written": written, "seconds": time.perf_counter() - t0}))
    return mirror


def split_counts(processed: Path, task: str) -> tuple[int, int]:
    """(examples read in every split, drops included; training examples kept) from the task's stats.json."""
    stats = json.loads((processed / task / "stats.json").read_text())
    read = sum(s["examples"] + sum(s["dropped"].values()) for s in stats["splits"].values())
    return read, stats["splits"]["train"]["examples"]


def run_size(work: Path, fraction: float, seed: int, beam_args: list[str], timeout: float,
             steps: Sequence[str] = STEPS, dask_workers: int = 0) -> dict:
    """Generate (or reuse) the corpora of one size and measure the chosen steps on them (vocab and loader
    read what the prepare steps of this or an earlier run left in <work>/processed). With `dask_workers`,
    prepare and vocab run a second time on the DaskRunner, into <work>/processed-dask, which must hold the
    same bytes (checked)."""
    mirror = generate(work, fraction, seed)
    params = ["--params", str(ROOT / "params.yaml")]
    tasks = list(TASKS.values())
    runs = [("", work / "processed", beam_args)]
    if dask_workers:
        runs.append((f" dask {dask_workers}", work / "processed-dask",
                     [*beam_args, "--runner=DaskRunner", f"--dask_local_workers={dask_workers}"]))
    results = {}
    for suffix, processed, flags in runs:
        for task in tasks if "prepare" in steps else ():
            m = measure([str(BIN / "deca"), "prepare", "--tasks", task, "--mirror", str(mirror), "--out",
                         str(processed), *params, *flags], work, timeout)
            m["examples"] = split_counts(processed, task)[0]
            results[f"prepare {task}{suffix}"] = m
            print(f"  prepare {task}{suffix}: {m['seconds']:.1f} s, {m['tree_mb']:.0f} MB", file=sys.stderr, flush=True)
        if "vocab" in steps:
            m = measure([str(BIN / "deca"), "prepare", "--vocab", str(processed / "vocab.txt"), "--tasks", *tasks,
                         "--out", str(processed), *params, *flags], work, timeout)
            results[f"vocab{suffix}"] = {**m, "examples": sum(split_counts(processed, t)[1] for t in tasks)}
    if len(runs) > 1 and {"prepare", "vocab"} & set(steps):
        check_same_bytes(runs[0][1], runs[1][1])
    processed = work / "processed"
    train_examples = sum(split_counts(processed, t)[1] for t in tasks) if "loader" in steps else 0
    if "loader" in steps:
        m = measure([str(BIN / "python"), "-m", "bench.scale", "--loader", str(processed), "--tasks", *tasks],
                    ROOT, timeout)
        results["loader"] = {**m, **json.loads(m["stdout"].strip().splitlines()[-1]), "examples": train_examples}
    return results


def check_same_bytes(a: Path, b: Path) -> None:
    """Stop if the two processed folders (FnApiRunner, DaskRunner) differ in any file."""
    import filecmp

    left = sorted(str(p.relative_to(a)) for p in a.rglob("*") if p.is_file())
    right = sorted(str(p.relative_to(b)) for p in b.rglob("*") if p.is_file())
    _, mismatch, errors = filecmp.cmpfiles(a, b, left, shallow=False)
    if left != right or mismatch or errors:
        raise SystemExit(f"error: the DaskRunner's output {b} differs from {a}: {(mismatch + errors)[:5]}")


def fmt_table(results: dict[int, dict], multiples: list[int]) -> str:
    base = results[multiples[0]]
    head = (f"{'step':<32}{'size':>5}{'examples':>10}{'seconds':>9}{'ex/s':>8}{'RSS MB':>8}{'anon MB':>8}"
            f"{'proc MB':>8}{'time/1x':>8}{'RSS/1x':>7}{'anon/1x':>8}")
    lines = [head, "-" * len(head)]
    for step in base:
        for k in multiples:
            m = results[k][step]
            b = base[step]
            lines.append(f"{step:<32}{k:>4}x{m['examples']:>10,}{m['seconds']:>9.1f}"
                         f"{m['examples'] / m['seconds']:>8.0f}{m['tree_mb']:>8.0f}{m['anon_mb']:>8.0f}"
                         f"{m['proc_mb']:>8.0f}{m['seconds'] / b['seconds']:>8.2f}"
                         f"{m['tree_mb'] / b['tree_mb']:>7.2f}{m['anon_mb'] / b['anon_mb']:>8.2f}")
    return "\n".join(lines)


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares y = a + b x."""
    b, a = np.polyfit(np.asarray(xs, float), np.asarray(ys, float), 1)
    return float(a), float(b)


def extrapolate(results: dict[int, dict], multiples: list[int], base: float) -> str:
    """Time (linear fit in examples) and memory (linear fit, i.e. what it would be if it keeps growing) at the
    full Table 1 size, per step; then the whole decathlon."""
    lines = ["", f"full size (Table 1, fraction 1.0 = {1 / base:.0f}x the base size):"]
    total_s, other, dask_s = 0.0, 0.0, 0.0
    for step in results[multiples[0]]:
        xs = [results[k][step]["examples"] for k in multiples]
        a_t, b_t = fit(xs, [results[k][step]["seconds"] for k in multiples])
        a_m, b_m = fit(xs, [results[k][step]["tree_mb"] for k in multiples])
        a_a, b_a = fit(xs, [results[k][step]["anon_mb"] for k in multiples])
        full = xs[0] / (base * multiples[0])
        t, mem = a_t + b_t * full, a_m + b_m * full
        lines.append(f"  {step:<30} {full:>11,.0f} examples  {t / 60:>5.1f} min  RSS {mem:>5.0f} MB "
                     f"({b_m * 1e5:+.1f} per 100k examples), anonymous {a_a + b_a * full:>5.0f} MB")
        if step.startswith("prepare") and " dask " not in step:
            total_s += t
        elif step.startswith("prepare"):
            dask_s += t
        if step == "prepare multinli.in.out":
            other = b_t * sum(OTHER_TRAIN.values())
    if total_s:
        lines.append(f"  prepare, the four corpora: {total_s / 60:.0f} min in one process; the six other decaNLP tasks "
                     f"({sum(OTHER_TRAIN.values()):,} training examples) at MultiNLI's cost per example: "
                     f"{other / 60:.1f} min more; whole decathlon about {(total_s + other) / 60:.0f} min "
                     "(divide by the Beam workers: `--direct_num_workers`, or a cluster)")
    if dask_s:
        lines.append(f"  prepare, the four corpora on the DaskRunner: {dask_s / 60:.0f} min")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=float, default=0.02, help="1x as a fraction of Table 1 (default 0.02)")
    parser.add_argument("--multiples", default="1,4,16")
    parser.add_argument("--work", type=Path, default=Path("/tmp/deca-scale"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--beam-args", default="", help="Beam flags for deca prepare (one string)")
    parser.add_argument("--dask-workers", type=int, default=0,
                        help="also run prepare and vocab on the DaskRunner with a local cluster of N workers")
    parser.add_argument("--timeout", type=float, default=3600, help="per step, seconds")
    parser.add_argument("--steps", default=",".join(STEPS), help="comma-separated subset of " + ", ".join(STEPS))
    parser.add_argument("--json", type=Path, help="also write the measurements here")
    parser.add_argument("--loader", help=argparse.SUPPRESS)
    parser.add_argument("--tasks", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.loader:
        loader_child(args.loader, args.tasks, budget=10000, seed=123)
        return 0
    if args.work.resolve().is_relative_to(ROOT):
        parser.error("--work must be outside the repository (e.g. under /tmp)")
    multiples = [int(m) for m in args.multiples.split(",")]
    results = {}
    for k in multiples:
        fraction = args.base * k
        print(f"[{time.strftime('%H:%M:%S')}] {k}x = {fraction:.3f} of Table 1 (load average "
              f"{os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
        results[k] = run_size(args.work / f"{k}x", fraction, args.seed, shlex.split(args.beam_args), args.timeout,
                              args.steps.split(","), args.dask_workers)
        for m in results[k].values():
            m.pop("stdout", None)
    print(f"deca prepare and the training data loader at {', '.join(f'{k}x' for k in multiples)} of "
          f"{args.base:.1%} of Table 1 (SQuAD, CNN/DM, MultiNLI, QA-ZRE; Beam flags: {args.beam_args or 'none'}; "
          f"{os.cpu_count()} CPUs, load average now {os.getloadavg()[0]:.1f})")
    print(fmt_table(results, multiples))
    if len(multiples) > 1:  # a fit needs two sizes or more
        print(extrapolate(results, multiples, args.base))
    if args.json:
        args.json.write_text(json.dumps({"base": args.base, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
