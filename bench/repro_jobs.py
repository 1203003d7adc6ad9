"""Benchmark: `make run`'s pipeline serial (`dvc repro`) against `deca repro --jobs N`, side by side (issue 46).

    .venv/bin/python -m bench.repro_jobs                      # 3 rounds, --jobs 1 against --jobs <CPUs>
    .venv/bin/python -m bench.repro_jobs --rounds 1 --jobs 2 --record docs/results/records/scale/repro_jobs.json

Each run is the whole pipeline of dvc.yaml on the bundled miniature corpora, from nothing, as on a fresh machine
after the install: a `git clone` of this repository's HEAD into a temporary folder (the project's .venv linked
in, no output, no DVC cache or run-cache), then `python -m deca.cli repro --jobs J` there, timed from outside.
Every round runs both settings, alternating which goes first, so a change in the machine's load falls on both;
the ratio of a round is serial time / parallel time (above 1: the parallel repro is faster). The load average is
taken before and after every run. A run that fails stops the bench with its last lines (nothing is recorded).
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import record

ROOT = Path(__file__).resolve().parents[1]


def one_run(jobs: int, work: Path) -> dict:
    """The whole pipeline in a fresh clone with `deca repro --jobs jobs`: its wall time and the load around it."""
    clone = work / f"clone-j{jobs}"
    shutil.rmtree(clone, ignore_errors=True)
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    (clone / ".venv").symlink_to(ROOT / ".venv")
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}:{os.environ['PATH']}", "DVC_NO_ANALYTICS": "1",
           "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled", "PYTHONHASHSEED": "0"}
    before = record.load()
    start = time.perf_counter()
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-m", "deca.cli", "repro", "--jobs", str(jobs)],
                          cwd=clone, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise SystemExit(f"error: `deca repro --jobs {jobs}` failed in {clone} (exit {done.returncode}):\n{tail}")
    stages = sum(1 for line in done.stdout.splitlines() if ": ran in " in line)
    shutil.rmtree(clone, ignore_errors=True)
    return {"jobs": jobs, "seconds": round(seconds, 2), "stages_run": stages, "load_before": before,
            "load_after": record.load()}


def summary(rounds: list[dict]) -> dict:
    """Median and min-max of the per-round ratios serial / parallel."""
    ratios = [r["serial"]["seconds"] / r["parallel"]["seconds"] for r in rounds]
    return {"ratios": [round(x, 3) for x in ratios], "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3), "max": round(max(ratios), 3)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.repro_jobs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds, each one serial and one parallel run (default 3)")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)),
                    help="stages at a time in the parallel run (default: the CPUs here, as `deca repro`)")
    ap.add_argument("--work", type=Path, default=None, help="where the clones go (default: a temporary folder)")
    ap.add_argument("--record", type=Path, help="write the JSON record here (bench/record.py)")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.jobs < 2:
        ap.error("--rounds must be >= 1 and --jobs >= 2 (--jobs 1 is the serial side)")
    started = record.begin("bench.repro_jobs", sys.argv[1:] if argv is None else argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="deca-repro-jobs-"))
    rounds = []
    for k in range(args.rounds):
        order = (1, args.jobs) if k % 2 == 0 else (args.jobs, 1)
        runs = {j: one_run(j, work) for j in order}
        rounds.append({"first": "serial" if order[0] == 1 else "parallel", "serial": runs[1], "parallel": runs[args.jobs]})
        r = rounds[-1]
        print(f"round {k + 1}: serial {r['serial']['seconds']:.0f} s, --jobs {args.jobs} {r['parallel']['seconds']:.0f} s, "
              f"x{r['serial']['seconds'] / r['parallel']['seconds']:.2f} (load {r['serial']['load_before']} / "
              f"{r['parallel']['load_before']})", flush=True)
    result = summary(rounds)
    print(f"serial / --jobs {args.jobs}: median x{result['median']:.2f} ({result['min']:.2f}-{result['max']:.2f}) "
          f"over {args.rounds} rounds")
    if args.record:
        record.write(args.record, started, {"rounds": args.rounds, "jobs": args.jobs, "cpus": os.cpu_count()},
                     {"runs": rounds, "summary": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
