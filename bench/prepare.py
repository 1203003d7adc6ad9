"""Benchmark: the `deca prepare` Beam pipeline vs a plain single-process loop, side by side (issue 16).

All variants do the same work on the same real files (../shared/corpora: SQuAD dev, SST, WOZ English,
QA-SRL): read raw records -> (context, question, answer) -> normalize, lowercase, revtok -> Parquet
shards of the processed schema (the same bytes). Each variant runs in its own fresh Python process, so
that its peak RSS (getrusage ru_maxrss; for the runners with worker processes also the largest worker's) is its own.

    .venv/bin/python -m bench.prepare [--corpora ../shared/corpora] [--repeat 1] [--variants plain,beam-mp2] \
        [--record docs/results/records/scale/prepare.json]

Variants:
  plain         the reference: a loop calling `pipelines.rows.to_row` per example, a Parquet file per
                5,000 rows (pyarrow)
  plain-cached  the same loop with the pipeline's `rows.TextCache` (each distinct text tokenized once
                per split), to tell what the cache gives from what the workers give
  beam          `deca prepare` in process (FnApiRunner, 1 worker)
  beam-mp2      `deca prepare --direct_num_workers=2 --direct_running_mode=multi_processing`: what
                `deca prepare` runs with 2 workers (two SDK worker processes; each reads, converts and
                writes its own shards)
  dask2         `deca prepare --runner=DaskRunner --dask_local_workers=2`: a local Dask cluster (scheduler
                in process, two worker processes of one thread) started for the job and stopped after it
  dask2-up      the DaskRunner on a 2-worker local Dask cluster that was already running
                (`--dask_client_address`): what a job costs on a cluster a team keeps up
Times are the job itself (imports and interpreter start excluded, reported separately; for beam-mp2
and dask2 they include starting and stopping the worker processes; dask2-up's cluster is started
before the timer and its first job warms the workers' imports, so it is run twice and the second timed). The last lines give the ratio of beam-mp2
to plain (issue 16 asks for >= 1.5x) and to plain-cached. Nothing is asserted: timings vary with the
machine and its load (run it on a quiet machine; --repeat keeps the best run of each variant). `--record`
writes every run of every variant (bench/record.py), with a digest of each run's Parquet files (names and
bytes), so that the outputs of two variants can be compared.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from bench import record

ROOT = Path(__file__).resolve().parents[1]

# (task, splits) on the real files; SQuAD has only its dev set in the mirror.
JOBS = {"squad": ["validation"], "sst": ["train", "validation", "test"],
        "woz.en": ["train", "validation", "test"], "srl": ["train", "validation", "test"]}
VARIANTS = {
    "plain": None,
    "plain-cached": None,
    "beam": [],
    "beam-mp2": ["--direct_num_workers=2", "--direct_running_mode=multi_processing"],
    "dask2": ["--runner=DaskRunner", "--dask_local_workers=2"],
    "dask2-up": ["--runner=DaskRunner"],  # + --dask_client_address of the cluster `child` starts
}
WORKER_VARIANTS = ("beam-mp2", "dask2", "dask2-up")  # their worker processes are children of the job


def peak_rss_mb(children: bool = False) -> float:
    """Peak resident set size in MiB of this process (or of its largest waited-for child)."""
    who = resource.RUSAGE_CHILDREN if children else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def run_plain(corpora: Path, out: Path, rows_per_shard: int, cached: bool = False) -> int:
    """The same read -> to_row -> Parquet work as one loop (with `cached`, one rows.TextCache per split);
    a Parquet file per `rows_per_shard` rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from deca.registry import Dropped, get_task
    from deca.schema import EXAMPLE_SCHEMA
    from pipelines.rows import TextCache, to_row

    n = 0
    for name, splits in JOBS.items():
        task = get_task(name)
        options = task.make_options()
        for split in splits:
            cache = TextCache() if cached else None
            target = out / name / split
            target.mkdir(parents=True)
            buffer: list[dict] = []
            shard = 0

            def flush():
                nonlocal shard, buffer
                pq.write_table(pa.Table.from_pylist(buffer, schema=EXAMPLE_SCHEMA), target / f"part-{shard:05d}.parquet")
                shard, buffer = shard + 1, []

            for item in task.read(split, task.files(split, corpora), options):
                if isinstance(item, Dropped):
                    continue
                row = to_row(task, split, item, options, cache=cache)
                if isinstance(row, Dropped):
                    continue
                buffer.append(row)
                n += 1
                if len(buffer) >= rows_per_shard:
                    flush()
            if buffer or shard == 0:
                flush()
    return n


def run_beam(corpora: Path, out: Path, rows_per_shard: int, beam_args: list[str]) -> int:
    from deca.config import PrepareConfig
    from pipelines import prepare

    cfg = PrepareConfig(rows_per_shard=rows_per_shard)
    names = list(JOBS)
    job = prepare.PrepareJob(splits=dict(JOBS), raw_root=corpora.resolve(), out=out,
                             options=prepare.task_options(cfg, names), rows_per_shard=rows_per_shard,
                             from_mirror=True)
    result = prepare.run(job, cfg, beam_args)
    return sum(s["examples"] for st in result.stats.values() for s in st["splits"].values())


@contextlib.contextmanager
def running_cluster(variant: str) -> Iterator[list[str]]:
    """For dask2-up: a local Dask cluster of two one-thread worker processes on 127.0.0.1, running while the
    variant runs, and the flag that points the DaskRunner at it; no flag for the other variants."""
    if variant != "dask2-up":
        yield []
        return
    import pipelines.dask_runner  # noqa: F401  (quiets Dask's INFO logs, as `deca prepare` does)
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"}) as cluster:
        yield [f"--dask_client_address={cluster.scheduler_address}"]


def child(variant: str, corpora: Path, rows_per_shard: int) -> dict:
    """Run one variant in this (fresh) process and return its measurements."""
    t0 = time.perf_counter()
    import apache_beam  # noqa: F401  (import cost counted for every variant alike)

    import pipelines.prepare  # noqa: F401
    import pipelines.rows  # noqa: F401
    from deca.registry import all_tasks

    all_tasks()
    imports = time.perf_counter() - t0
    import_rss = peak_rss_mb()
    with tempfile.TemporaryDirectory(prefix="bench-prepare-") as tmp, running_cluster(variant) as address:
        beam_args = VARIANTS[variant] and VARIANTS[variant] + address
        if address:  # warm the running cluster's workers (imports), as a second job would find them
            run_beam(corpora, Path(tmp) / "warm", rows_per_shard, beam_args)
        start = time.perf_counter()
        if beam_args is None:
            n = run_plain(corpora, Path(tmp), rows_per_shard, cached=variant == "plain-cached")
        else:
            n = run_beam(corpora, Path(tmp) / "processed", rows_per_shard, beam_args)
        seconds = time.perf_counter() - start
        written = Path(tmp) / "processed" if beam_args is not None else Path(tmp)  # in-process beam's args are []
        size = sum(p.stat().st_size for p in written.rglob("*.parquet"))
        digest = parquet_digest(written)
    return {"variant": variant, "examples": n, "seconds": seconds, "imports": imports,
            "rss_mb": peak_rss_mb(), "import_rss_mb": import_rss, "child_rss_mb": peak_rss_mb(children=True),
            "parquet_mb": size / 2**20, "digest": digest}


def parquet_digest(folder: Path) -> str:
    """sha256 (16 hex) over the Parquet files under `folder`: their relative names and bytes, in name order."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.parquet")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    parser.add_argument("--repeat", type=int, default=1, help="runs per variant (best time is reported)")
    parser.add_argument("--rows-per-shard", type=int, default=5000)
    parser.add_argument("--variants", default=",".join(VARIANTS), help="comma-separated subset of " + ", ".join(VARIANTS))
    parser.add_argument("--record", type=Path, help="write every run and the ratios as JSON here (bench/record.py)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.corpora, args.rows_per_shard)))
        return 0
    if not args.corpora.is_dir():
        print(f"error: {args.corpora} not found (pass --corpora DIR: a mirror with squad/, sst/, woz/, srl/)", file=sys.stderr)
        return 1
    variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in variants if v not in VARIANTS]
    if unknown:
        print(f"error: unknown variant(s) {', '.join(unknown)}; choose from {', '.join(VARIANTS)}", file=sys.stderr)
        return 1
    started = record.begin("bench.prepare")
    runs = measure(variants, args)
    if runs is None:
        return 1
    results = {v: min(rs, key=lambda r: r["seconds"]) for v, rs in runs.items()}
    print_table(results, args)
    counts = {r["examples"] for r in results.values()}
    if len(counts) > 1:
        print(f"warning: variants produced different example counts: {sorted(counts)}", file=sys.stderr)
        return 1
    if args.record:
        settings = {"corpora": str(args.corpora), "repeat": args.repeat, "rows_per_shard": args.rows_per_shard,
                    "variants": variants, "jobs": JOBS}
        record.write(args.record, started, settings, {"runs": runs, "ratios": ratios(results)})
    return 0


def measure(variants: list[str], args) -> dict[str, list[dict]] | None:
    """Every run of every variant, each in a fresh process, round-robin over the variants so that a change
    in the machine's load hits them alike (None when a run failed)."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    runs: dict[str, list[dict]] = {}
    for _ in range(args.repeat):
        for variant in variants:
            proc = subprocess.run([sys.executable, "-m", "bench.prepare", "--child", variant, "--corpora", str(args.corpora),
                                   "--rows-per-shard", str(args.rows_per_shard)],
                                  capture_output=True, text=True, env=env, cwd=ROOT)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return None
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            runs.setdefault(variant, []).append(r)
            print(f"  {variant}: {r['examples']:,} examples in {r['seconds']:.2f} s", file=sys.stderr)
    return runs


def print_table(results: dict[str, dict], args) -> None:
    """The best run of each variant, its examples/s against plain, and the issue-16 line."""
    base = results.get("plain")
    jobs = ", ".join(f"{t}[{'/'.join(s)}]" for t, s in JOBS.items())
    print(f"prepare benchmark: {jobs} from {args.corpora}")
    print(f"{'variant':<12} {'examples':>9} {'job s':>7} {'ex/s':>8} {'vs plain':>9} {'imports s':>9} "
          f"{'RSS after imports':>17} {'peak RSS MiB':>12} {'workers MiB':>11} {'parquet MiB':>11}")
    for r in results.values():
        rate = r["examples"] / r["seconds"]
        ratio = f"{rate / (base['examples'] / base['seconds']):.2f}x" if base else "-"
        workers = f"{r['child_rss_mb']:.0f}" if r["variant"] in WORKER_VARIANTS else "-"
        print(f"{r['variant']:<12} {r['examples']:>9,} {r['seconds']:>7.2f} {rate:>8,.0f} {ratio:>9} "
              f"{r['imports']:>9.2f} {r['import_rss_mb']:>17.0f} {r['rss_mb']:>12.0f} {workers:>11} {r['parquet_mb']:>11.1f}")
    print(f"machine: {os.cpu_count()} CPU(s), load average {os.getloadavg()[0]:.2f} after the runs; "
          f"best of {args.repeat} run(s) per variant")
    print(target_line(results))


def ratios(results: dict[str, dict]) -> dict[str, float]:
    """Each variant's examples/s (its best run) over plain's, and beam-mp2's over plain-cached's where both ran."""
    rate = {v: r["examples"] / r["seconds"] for v, r in results.items()}
    out = {f"{v}/plain": rate[v] / rate["plain"] for v in rate if "plain" in rate and v != "plain"}
    if "beam-mp2" in rate and "plain-cached" in rate:
        out["beam-mp2/plain-cached"] = rate["beam-mp2"] / rate["plain-cached"]
    return out


def target_line(results: dict[str, dict]) -> str:
    """The issue-16 line: beam-mp2's examples/s against plain (and against plain-cached where measured)."""
    rate = {v: r["examples"] / r["seconds"] for v, r in results.items()}
    if "beam-mp2" not in rate or "plain" not in rate:
        return "target: run at least plain and beam-mp2 to compare them"
    line = f"deca prepare with 2 workers (beam-mp2): {rate['beam-mp2'] / rate['plain']:.2f}x the plain loop (issue 16: >= 1.5x)"
    if "plain-cached" in rate:
        line += f"; {rate['beam-mp2'] / rate['plain-cached']:.2f}x the plain loop with the same text cache"
    return line


if __name__ == "__main__":
    sys.exit(main())
