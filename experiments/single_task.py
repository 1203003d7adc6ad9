"""One task's single-task recipe trained for exactly --iterations in a plain loop (train/recipe.py's `train`,
no Ray, --threads threads), so that two settings can run side by side on 2 cores under the same load: bf16
against fp32 (issue 27), one Table 2 variant against another (`--set model.variant=s2s`), seeds
(`--set train.seed=2`). Validation is the recipe's own (in the training precision, with the moving average
when train.ema_decay is set); the best model goes to <out>/best/model.pt, the curve to <out>/curve.json and the
best model's per-example validation statistics, from the round that chose it, to <out>/examples.json.gz
(experiments/results/examples.py; written at each new best, so a stopped run keeps its best so far).

    # the README's GloVe recipe on SST, fp32 and bf16 at once (one core each), then the comparison
    for p in fp32 bf16; do .venv/bin/python -m experiments.single_task run --task sst --iterations 1200 \\
        --val-every 100 --precision $p --overlay infra/params/glove.yaml --out checkpoints/precision/sst-$p & done; wait
    .venv/bin/python -m experiments.single_task compare checkpoints/precision/sst-fp32 \\
        checkpoints/precision/sst-bf16 --png docs/results/precision_sst.png

Data: the experiments' workdir (bench/workdir.py) (prepared on first use: SST, WOZ, QA-SRL and MWSC).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

from bench.workdir import ROOT
from deca.metric_logging import MemoryLogger


class TimedLogger(MemoryLogger):
    """MemoryLogger that also keeps the minutes since training (re)started at each logged step."""

    def __init__(self):
        super().__init__()
        self.start, self.minutes, self.first = time.monotonic(), {}, 0

    def restart(self, iteration: int) -> None:
        self.start, self.first = time.monotonic(), iteration

    def log_metrics(self, values, step):
        super().log_metrics(values, step)
        self.minutes[int(step)] = (time.monotonic() - self.start) / 60


class Stopped(Exception):
    """SIGTERM or SIGINT arrived: save the state at the next iteration and end."""


@contextlib.contextmanager
def stop_on_signals() -> Iterator[Callable]:
    """Within the block, SIGTERM/SIGINT only set a flag, and the yielded recipe hook raises Stopped once it is
    set: the run ends between two iterations (never in the middle of one), so its state can be saved."""
    asked: list[int] = []
    previous = {sig: signal.signal(sig, lambda signum, frame: asked.append(signum))
                for sig in (signal.SIGTERM, signal.SIGINT)}

    def hook(recipe) -> None:
        if asked:
            raise Stopped(f"signal {asked[0]} at iteration {recipe.iteration}")
    try:
        yield hook
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def curve_record(args, params, recipe, logger, earlier: dict | None) -> dict:
    """The run's record: settings, machine, load and the validation curve (earlier segments' points first; with
    several tasks each point also holds every task's headline) and the schedule's phases (MLflow's tags)."""
    tasks = args.task.split(",")
    headline = dict(logger.metrics.get(f"validation/{tasks[0]}/headline", []))  # the first task's
    each = {t: dict(logger.metrics.get(f"validation/{t}/headline", [])) for t in tasks}
    loss = dict(logger.metrics.get("train/loss", []))
    tps = dict(logger.metrics.get("train/tokens_per_s", []))
    offset = earlier["minutes"] if earlier else 0.0
    curve = (earlier["curve"] if earlier else []) + [
        {"iteration": it, "minutes": offset + logger.minutes[it], "headline": value, "loss": loss.get(it),
         "tokens_per_s": tps.get(it), "device": args.device,
         **({"headlines": {t: each[t].get(it) for t in tasks}} if len(tasks) > 1 else {})}
        for it, value in sorted(headline.items())]
    phases = {**(earlier or {}).get("phases", {}),
              **{k: v for k, v in logger.tags.items() if k.startswith("phase.")}}  # "<name> from iteration <i>"
    segments = (earlier or {}).get("segments", []) + [
        {"device": args.device, "host": platform.node(), "from_iteration": logger.first,
         "to_iteration": recipe.iteration}]
    return {"task": args.task, "precision": recipe.precision, "seed": params.train.seed,
            "variant": params.model.variant, "iterations": args.iterations, "threads": args.threads,
            "overlay": args.overlay, "overrides": args.overrides, "load_end": os.getloadavg(),
            "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "segments": segments,
            "minutes": offset + (time.monotonic() - logger.start) / 60,
            "curve": curve, **({"phases": phases} if phases else {})}


def keep_examples(out: Path) -> Callable:
    """The recipe's best hook: the validation round that found the new best model, per example, into
    <out>/examples.json.gz (the round's statistics, not a second decoding)."""
    from eval.api import headline_metric
    from experiments.results import examples

    def hook(recipe) -> None:
        found = recipe.validator.examples
        tasks = {t: examples.task_record(t, headline_metric(t), rows, found[t])
                 for t, rows in recipe.validator.rows.items() if found.get(t) is not None}
        examples.write(out / examples.FILE, examples.run_record(out.name, recipe.iteration, tasks))
    return hook


def run(args) -> int:
    """Train, validating every --val-every iterations; write <out>/curve.json. A SIGTERM or SIGINT saves the
    state in <out>/state (and the curve so far in <out>/curve.partial.json); the same command continues it. A
    finished run keeps its state too: the command with a larger --iterations continues it to the new length, as
    one run of that length would have gone (the learning rate depends on the step only, not on the budget)."""
    import torch

    from bench import workdir as ex
    from deca.checks import load_params
    from deca.params_args import parse_overrides
    from deca.io import write_json
    from train.distributed import Distributed
    from train.recipe import local_recipe

    work, tasks = Path(args.workdir).resolve(), args.task.split(",")
    if not all((work / "processed" / t / "train").is_dir() for t in tasks):
        ex.prepare(work)  # SST, WOZ, QA-SRL and MWSC from ../shared/corpora, and their vocabulary
    overrides = {"data.processed_dir": str(work / "processed"), "data.vocab_path": str(work / "vocab.txt"),
                 **ex.overlay_overrides(args.overlay), "train.iterations": args.iterations,
                 "train.val_every": args.val_every, "train.log_every": args.val_every, "train.save_every": 0,
                 "train.strategy": "single_task" if len(tasks) == 1 else "fully_joint",
                 "train.precision": args.precision,
                 **parse_overrides(args.overrides)}
    params = load_params(ROOT / "params.yaml", overrides=overrides)
    torch.set_num_threads(args.threads)
    state, partial = args.out / "state", args.out / "curve.partial.json"
    finished = finished_at(args.out)
    if finished is not None and finished >= args.iterations:
        print(f"{args.out} finished at {finished} iterations (asked {args.iterations}): nothing to do")
        return 0
    earlier = so_far(args.out)
    logger = TimedLogger()
    with stop_on_signals() as stop:
        recipe = local_recipe(params, tasks, logger=logger, run_dir=args.out, hooks=[stop],
                              dist=Distributed(device=torch.device(args.device)),
                              checkpoint_dir=state if earlier else None, best_hooks=[keep_examples(args.out)])
        recipe.validator.keep_examples = True
        if earlier:
            print(f"continuing {args.out} from iteration {recipe.iteration} (its state in {state})")
        logger.restart(recipe.iteration)
        try:
            recipe.train()
        except Stopped as why:
            save_state(recipe, state)
            write_json(partial, curve_record(args, params, recipe, logger, earlier))
            print(f"stopped by {why}: state in {state}; the same command continues the run")
            return 3
    record = curve_record(args, params, recipe, logger, earlier)
    write_json(args.out / "curve.json", record)  # atomic: an interrupted run leaves no half-written curve
    shutil.rmtree(state, ignore_errors=True)
    partial.unlink(missing_ok=True)
    save_state(recipe, state)  # kept: a longer --iterations continues the run (the rate depends on the step only)
    best = max(record["curve"], key=lambda p: p["headline"])
    print(f"{args.task} {recipe.precision}: best {best['headline']:.1f} at iteration {best['iteration']} "
          f"({best['minutes']:.1f} min); curve in {args.out / 'curve.json'}")
    return 0


def finished_at(out: Path) -> int | None:
    """The iterations a finished run in `out` was asked for (its curve.json), None when it has not finished."""
    path = out / "curve.json"
    if not path.is_file():
        return None
    try:
        return int(json.loads(path.read_text(encoding="utf-8"))["iterations"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"error: {path}: not a finished run's curve ({exc}); move it aside to run {out} afresh")


def so_far(out: Path) -> dict | None:
    """The record of the run to continue in `out`, None to start afresh: one stopped by a signal
    (curve.partial.json) or one finished at fewer iterations than now asked (curve.json), each with its state."""
    if not (out / "state").is_dir():
        return None
    for name in ("curve.partial.json", "curve.json"):
        if (out / name).is_file():
            return json.loads((out / name).read_text(encoding="utf-8"))
    return None


def save_state(recipe, state: Path) -> None:
    """The recipe's resumable state into `state`, replacing an earlier one only once it is complete."""
    tmp, old = state.with_name(state.name + ".tmp"), state.with_name(state.name + ".old")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    recipe.save_state(tmp)
    if state.exists():
        shutil.rmtree(old, ignore_errors=True)
        state.rename(old)  # moved aside, not deleted, until the new state is in place
    tmp.rename(state)
    shutil.rmtree(old, ignore_errors=True)


def at_minutes(curve: list[dict], minutes: float) -> float:
    """The best headline reached within `minutes`."""
    seen = [p["headline"] for p in curve if p["minutes"] <= minutes]
    return max(seen) if seen else float("nan")


def compare(args) -> int:
    """The Markdown table of the runs (best, and best within the shortest run's minutes) and their curves."""
    missing = [d for d in args.runs if not (Path(d) / "curve.json").is_file()]
    if missing:
        raise SystemExit(f"error: no curve.json in {', '.join(missing)}: the run has not finished (rerun it with "
                         "`python -m experiments.single_task run ... --out <folder>`)")
    runs = [json.loads((Path(d) / "curve.json").read_text(encoding="utf-8")) for d in args.runs]
    shortest = min(r["curve"][-1]["minutes"] for r in runs)
    print(f"| task | variant | precision | seed | iterations | best headline (iteration, min) "
          f"| best within {shortest:.1f} min | train tokens/s (median) |")
    print("|---|---|---|---:|---:|---|---:|---:|")
    for r in runs:
        best = max(r["curve"], key=lambda p: p["headline"])
        tps = sorted(p["tokens_per_s"] for p in r["curve"] if p["tokens_per_s"])
        print(f"| {r['task']} | {r.get('variant', 'mqan')} | {r['precision']} | {r['seed']} | {r['iterations']} "
              f"| {best['headline']:.1f} "
              f"({best['iteration']}, {best['minutes']:.1f}) | {at_minutes(r['curve'], shortest):.1f} "
              f"| {tps[len(tps) // 2]:,.0f} |")
    if args.png:
        plot(runs, args.png)
    return 0


def plot(runs: list[dict], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for r in runs:
        label = f"{r['task']} {r.get('variant', 'mqan')} {r['precision']} seed {r['seed']}"
        its, mins, vals = zip(*[(p["iteration"], p["minutes"], p["headline"]) for p in r["curve"]])
        axes[0].plot(its, vals, marker="o", ms=3, label=label)
        axes[1].plot(mins, vals, marker="o", ms=3, label=label)
    axes[0].set_xlabel("iteration")
    axes[1].set_xlabel("minutes (runs side by side, one core each)")
    for ax in axes:
        ax.set_ylabel("validation headline")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train one precision")
    r.add_argument("--task", default="sst", help="a task, or several with commas (then trained fully joint; "
                   "the curve follows the first one, the best model the sum of their headlines)")
    r.add_argument("--iterations", type=int, required=True)
    r.add_argument("--val-every", type=int, default=100)
    r.add_argument("--precision", default="fp32", choices=("fp32", "bf16"))
    r.add_argument("--threads", type=int, default=1)
    r.add_argument("--device", default="cpu", help="cpu or cuda (default: %(default)s)")
    r.add_argument("--workdir", default=str(ROOT / "checkpoints" / "readme-experiment"))
    r.add_argument("--overlay", action="append", default=[], metavar="FILE")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    r.add_argument("--out", type=Path, required=True, help="run folder: best/model.pt and curve.json")
    c = sub.add_parser("compare", help="table and curves of finished runs")
    c.add_argument("runs", nargs="+")
    c.add_argument("--png", type=Path)
    args = ap.parse_args(argv)
    from deca.errors import DecaError

    try:
        return run(args) if args.command == "run" else compare(args)
    except DecaError as exc:  # a bad task, key or file: one line, as `deca` prints it
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
