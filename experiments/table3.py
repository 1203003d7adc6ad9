"""Table 3 in miniature (issue 25 item 2): MQAN trained fully joint, with the SQuAD-first anti-curriculum and
with the paper's curriculum on a SQuAD-derived task (the SQuAD development set split by article) plus SST,
QA-SRL, WOZ and MWSC; each run is `deca train` (Ray Train, tracked in MLflow with its phases), and the
table puts the strategies side by side with the paper's Table 3 and says whether its findings hold here.

    .venv/bin/python -m experiments.table3 run                  # 3 strategies x seeds 123 and 7, 2 at a time
    .venv/bin/python -m experiments.table3 run --strategies anti_curriculum --seeds 11
    .venv/bin/python -m experiments.table3 report --png docs/results/table3.png   # the table of finished runs
    .venv/bin/python -m experiments.table3 prepare --workdir W  # only the data (experiments/grid.sh's runs)
    deca compare --mlflow table3 --paper --tracking-uri sqlite:///checkpoints/table3/mlflow.db \\
        --params checkpoints/table3/params.yaml                 # the same runs beside the paper's rows

Params: params.yaml, then infra/params/glove.yaml (the README's recipe on 2 cores), the --overlay files
(e.g. infra/params/paper.yaml and infra/params/gpu.yaml: the paper's model on a GPU), infra/params/table3.yaml
(the tasks, the budget and the phase length, with where they come from), then --set (a larger budget).
The merged file is <workdir>/params.yaml. Finished runs are skipped; a stopped one continues
(`deca train --auto-resume`). Each run's command, seed, minutes and machine load go to <workdir>/runs/, and its
best model's per-example validation statistics (`deca evaluate` on the rows it validated on, each example with
its cluster: experiments/results/examples.py) to <workdir>/runs/<run>.examples.json.gz.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from deca.io import write_json
from eval.verdict import still_rising
from experiments.results.render import judge  # the one verdict rule of every results page
from experiments.results.table3 import PAPER, TASKS  # the paper's Table 3 on the five tasks here
from infra.overlay import load_overlay, merge

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared" / "corpora"))  # as bench/workdir.py

OVERLAYS = ("infra/params/glove.yaml", "infra/params/table3.yaml")
# The miniature's strategies -> train.strategy ("custom" runs infra/params/table3.yaml's train.phases:
# the SQuAD-derived task alone, then fully joint).
STRATEGIES = {"fully_joint": "fully_joint", "anti_curriculum": "custom", "curriculum": "curriculum"}


def write_params(workdir: Path, overlays: list[str], overrides: list[str]) -> Path:
    """params.yaml + the overlays + --set, with the workdir's data, checkpoints and MLflow experiment, into
    <workdir>/params.yaml; loaded once here so that a bad key fails before anything runs."""
    from deca.checks import load_params
    from deca.params_args import parse_overrides

    merged = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    for path in (OVERLAYS[0], *overlays, OVERLAYS[1]):  # the grid's tasks and budget stay; --set changes them
        merged = merge(merged, load_overlay(ROOT / path))
    merged = merge(merged, {"custom_tasks": mirrored(merged.get("custom_tasks", {})),
                            "data": {"processed_dir": str(workdir / "processed"),
                                     "vocab_path": str(workdir / "vocab.txt"), "tasks": list(merged["train"]["tasks"])},
                            "train": {"storage_dir": str(workdir / "checkpoints"), "experiment": "table3"}})
    for key, value in parse_overrides(overrides).items():
        node = merged
        *parents, leaf = key.split(".")
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = value
    path, tmp = workdir / "params.yaml", workdir / "params.yaml.tmp"
    workdir.mkdir(parents=True, exist_ok=True)
    tmp.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
    try:
        load_params(tmp)  # a bad --set or overlay fails here and leaves the params of earlier runs as they were
    except Exception:
        tmp.unlink()
        raise
    tmp.replace(path)
    return path


def mirrored(custom: dict) -> dict:
    """The custom tasks' files under SHARED (DECA_SHARED_CORPORA) where their ../shared/corpora/... path is not
    there (a worktree or a GPU machine whose mirror lies elsewhere); other paths as given."""
    prefix = "../shared/corpora/"
    return {name: {**cfg, "files": {split: str(SHARED / f[len(prefix):])
                                    if f.startswith(prefix) and not (ROOT / f).is_file() else f
                                    for split, f in cfg.get("files", {}).items()}}
            for name, cfg in custom.items()}


def deca(*args: str, env: dict | None = None, log: Path | None = None) -> None:
    """A `deca` command in this interpreter; its output to `log` when given. CalledProcessError on failure."""
    command = [sys.executable, "-m", "deca.cli", *args]
    if log is None:
        subprocess.run(command, check=True, cwd=ROOT, env=env)
        return
    with log.open("a", encoding="utf-8") as out:
        subprocess.run(command, check=True, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def prepare(workdir: Path, params: Path) -> None:
    """The five tasks' train and validation splits, and their vocabulary (skipped when there)."""
    if not all((workdir / "processed" / t / "validation").is_dir() for t in TASKS):
        deca("prepare", "--params", str(params), "--tasks", *TASKS, "--splits", "train,validation",
             "--mirror", str(SHARED), "--out", str(workdir / "processed"))
    if not (workdir / "vocab.txt").is_file():
        deca("prepare", "--params", str(params), "--vocab", str(workdir / "vocab.txt"), "--tasks", *TASKS,
             "--out", str(workdir / "processed"))


def train(workdir: Path, params: Path, strategy: str, seed: int) -> str:
    """One `deca train` run (output in <workdir>/logs/<run>.log); its record (command, minutes, load before
    and after) in <workdir>/runs/<run>.json once it finished."""
    name = f"table3-{strategy}-s{seed}"
    command = ["deca", "train", "--params", str(params), "--set", f"train.strategy={STRATEGIES[strategy]}",
               "--set", f"train.seed={seed}", "--run-name", name, "--auto-resume", "--no-progress"]
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{workdir / 'mlflow.db'}"}
    load, start = os.getloadavg(), time.monotonic()
    print(f"[{time.strftime('%H:%M:%S')}] start {name} | load {load[0]:.2f} | log {workdir / 'logs' / name}.log",
          flush=True)
    try:
        deca(*command[1:], env=env, log=workdir / "logs" / f"{name}.log")
    except subprocess.CalledProcessError as exc:
        return f"{name} FAILED (exit {exc.returncode}; see its log)"
    minutes = (time.monotonic() - start) / 60
    try:
        keep_examples(workdir, params, name)
    except subprocess.CalledProcessError as exc:
        return f"{name} trained, its evaluation FAILED (exit {exc.returncode}; see its log); rerun to retry it"
    record = {"run": name, "strategy": strategy, "seed": seed, "command": " ".join(command),
              "minutes": minutes, "load_before": load, "load_after": os.getloadavg(),
              "cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    write_json(workdir / "runs" / f"{name}.json", record)
    return f"{name} done in {record['minutes']:.1f} min"


def keep_examples(workdir: Path, params: Path, name: str) -> Path:
    """The run's best model evaluated on the validation rows it was chosen on (`deca evaluate`, the first
    train.max_val_examples of each split), kept per example in <workdir>/runs/<name>.examples.json.gz."""
    from experiments.results import examples

    limit = yaml.safe_load(params.read_text(encoding="utf-8"))["train"].get("max_val_examples")
    out = workdir / "evaluations" / name
    deca("evaluate", "--params", str(params), "--run", str(workdir / "checkpoints" / name), "--split", "validation",
         *(["--max-examples", str(limit)] if limit else []), "--out", str(out), "--no-mlflow", "--no-progress",
         "--contamination", "none", log=workdir / "logs" / f"{name}.log")
    return examples.write(workdir / "runs" / f"{name}.{examples.FILE}",
                          examples.from_evaluation(name, out / "metrics.json", out / "predictions"))


def run(args) -> int:
    """Prepare, train the runs not yet finished (--parallel at a time), then the report."""
    workdir = Path(args.workdir).resolve()
    params = write_params(workdir, args.overlay, args.overrides)
    prepare(workdir, params)
    (workdir / "logs").mkdir(exist_ok=True)
    from mlflow import MlflowClient

    MlflowClient(tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}").search_experiments()  # create the store once,
    # before runs start side by side (two processes creating it at once fail in its schema migration)
    todo = [(s, seed) for seed in args.seeds for s in args.strategies
            if not (workdir / "runs" / f"table3-{s}-s{seed}.json").is_file()]
    print(f"{len(todo)} runs to do, {args.parallel} at a time")
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        for outcome in pool.map(lambda job: train(workdir, params, *job), todo):
            print(f"[{time.strftime('%H:%M:%S')}] {outcome}", flush=True)
    return report(args)


def read_runs(workdir: Path) -> dict[str, dict]:
    """{run name: {"strategy", "seed", "run_id", "curves", "scores": {task: last validation headline}, "phases",
    "record"}} of the finished runs in <workdir>/mlflow.db."""
    from mlflow import MlflowClient

    if not (workdir / "mlflow.db").is_file():
        raise SystemExit(f"error: no {workdir / 'mlflow.db'}: run `table3.py run` first "
                         "(or pass the --workdir it used)")
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}")
    exp = client.get_experiment_by_name("table3")
    if exp is None:
        raise SystemExit(f"error: no MLflow experiment 'table3' in {workdir / 'mlflow.db'}: run `table3.py run` first")
    runs = {}
    for r in client.search_runs([exp.experiment_id], order_by=["attributes.start_time ASC"]):
        name = r.info.run_name or ""
        if r.info.status != "FINISHED" or not name.startswith("table3-"):
            continue
        strategy, seed = name[len("table3-"):].rsplit("-s", 1)
        curves = {t: sorted((m.step, m.value)
                            for m in client.get_metric_history(r.info.run_id, f"validation/{t}/headline"))
                  for t in TASKS}
        phases = [r.data.tags[k] for k in sorted(k for k in r.data.tags if k.startswith("phase."))]
        record = workdir / "runs" / f"{name}.json"
        runs[name] = {"strategy": strategy, "seed": int(seed), "run_id": r.info.run_id, "curves": curves,
                      "scores": {t: c[-1][1] for t, c in curves.items() if c}, "phases": phases,
                      "record": json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}}
    return runs


def runs_table(runs: dict[str, dict]) -> list[str]:
    """One line per run: its phases (MLflow tags), iterations, minutes and the machine's load around it."""
    lines = ["| run | MLflow run | phases (MLflow tags) | minutes | load average before / after |",
             "|---|---|---|---:|---|"]
    for name, r in runs.items():
        rec = r["record"]
        load = (f"{rec['load_before'][0]:.1f} / {rec['load_after'][0]:.1f}" if rec else "-")
        minutes = f"{rec['minutes']:.1f}" if rec else "-"
        lines.append(f"| {name} | {r['run_id'][:8]} | {'; '.join(r['phases'])} | {minutes} | {load} |")
    return lines


def spread(values: list[float]) -> tuple[float, float | None]:
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else None)


def show(values: list[float]) -> str:
    mean, sd = spread(values)
    return f"{mean:.1f}" + (f" ± {sd:.1f}" if sd is not None else "")


def table(runs: dict[str, dict]) -> list[str]:
    """The Markdown table (mean ± sd over seeds of the last validation round) and the verdicts."""
    by = {s: [r for r in runs.values() if r["strategy"] == s] for s in STRATEGIES}
    values = {s: {t: [r["scores"][t] for r in rs if t in r["scores"]] for t in (*TASKS, "sum")} for s, rs in by.items()}
    for s, rs in by.items():
        values[s]["sum"] = [sum(r["scores"].get(t, 0.0) for t in TASKS) for r in rs]
    lines = ["| strategy | seeds | " + " | ".join(TASKS) + " | sum of 5 | paper (same tasks; SQuAD for squad_dev) |",
             "|---|---:|" + "---:|" * (len(TASKS) + 1) + "---|"]
    for s, rs in by.items():
        if not rs:
            continue
        paper = PAPER[s]
        cells = [show(values[s][t]) if values[s][t] else "-" for t in (*TASKS, "sum")]
        lines.append(f"| {s} | {', '.join(str(r['seed']) for r in rs)} | " + " | ".join(cells)
                     + f" | {' / '.join(f'{paper[t]:.1f}' for t in TASKS)} = {sum(paper.values()):.1f} |")
    lines += ["", "| the paper's finding | paper | here (change of the means [95% Welch interval]) | verdict (eval/verdict.py) |",
              "|---|---:|---:|---|"]
    for s, task, text in (("anti_curriculum", "sum", "SQuAD first beats fully joint (sum of the 5)"),
                          ("anti_curriculum", "squad_dev", "SQuAD first raises SQuAD"),
                          ("curriculum", "sum", "the curriculum (easy tasks first) lowers the sum"),
                          ("curriculum", "squad_dev", "the curriculum lowers SQuAD")):
        if not values[s][task] or not values["fully_joint"][task]:
            lines.append(f"| {text} | | not run | |")
            continue
        paper = (sum(PAPER[s].values()) - sum(PAPER["fully_joint"].values()) if task == "sum"
                 else PAPER[s][task] - PAPER["fully_joint"][task])
        rising = [any(rising_run(r, task) for r in by[side]) for side in ("fully_joint", s)]
        change, said = judge(values["fully_joint"][task], values[s][task], paper, rising=rising)
        shown = f"{change.value:+.1f}" + (f" [{change.low:+.1f}, {change.high:+.1f}]" if change.low > -1e308 else "")
        lines.append(f"| {text} | {paper:+.1f} | {shown} | {said} |")
    return lines


def rising_run(run: dict, task: str) -> bool:
    """Whether the run's validation curve of `task` (any of the five for "sum") still rises over the last third
    of its iterations (eval/verdict.py)."""
    tasks = TASKS if task == "sum" else (task,)
    return any(still_rising(run["curves"].get(t) or []) for t in tasks)


def plot(runs: dict[str, dict], png: Path) -> None:
    """Each task's validation curve, one line per run (colour: strategy)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = dict(zip(STRATEGIES, ("tab:blue", "tab:red", "tab:green")))
    fig, axes = plt.subplots(1, len(TASKS), figsize=(4 * len(TASKS), 3.4))
    for ax, task in zip(axes, TASKS):
        for name, r in runs.items():
            if r["curves"].get(task):
                its, vals = zip(*r["curves"][task])
                ax.plot(its, vals, marker="o", ms=3, color=colors[r["strategy"]],
                        ls="-" if r["seed"] == 123 else "--", label=f"{r['strategy']} s{r['seed']}")
        ax.set_title(task)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("validation headline")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    print(f"wrote {png}")


def report(args) -> int:
    workdir = Path(args.workdir).resolve()
    runs = read_runs(workdir)
    lines = table(runs) + [""] + runs_table(runs)
    print("\n".join(lines))
    if args.md:
        Path(args.md).write_text("\n".join(lines) + "\n", encoding="utf-8")
    if args.png:
        plot(runs, Path(args.png))
    (workdir / "table3.json").write_text(json.dumps(runs, indent=1), encoding="utf-8")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="train the grid (finished runs are skipped), then the report")
    r.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=list(STRATEGIES))
    r.add_argument("--seeds", nargs="+", type=int, default=[123, 7])
    r.add_argument("--overlay", action="append", default=[], metavar="FILE", help="after infra/params/table3.yaml")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    r.add_argument("--parallel", type=int, default=2, help="runs at a time (default: %(default)s: one core each)")
    sub.add_parser("prepare", help="only the params and the five tasks' data and vocabulary in --workdir "
                   "(experiments/grid.sh, which trains Table 3's runs with experiments/single_task.py)")
    for p in (r, sub.choices["prepare"], sub.add_parser("report", help="the table of the finished runs")):
        p.add_argument("--workdir", default=str(ROOT / "checkpoints" / "table3"))
        p.add_argument("--md", help="also write the table to this Markdown file")
        p.add_argument("--png", help="also plot the validation curves to this file")
    args = ap.parse_args(argv)
    from deca.errors import DecaError

    try:
        if args.command == "prepare":
            workdir = Path(args.workdir).resolve()
            prepare(workdir, write_params(workdir, [], []))
            return 0
        return run(args) if args.command == "run" else report(args)
    except DecaError as exc:
        raise SystemExit(f"error: {exc}") from None
    except subprocess.CalledProcessError as exc:  # deca prepare: its own message is printed above
        raise SystemExit(f"error: `{' '.join(exc.cmd[2:])}` failed (exit {exc.returncode}); see its message above") \
            from None


if __name__ == "__main__":
    sys.exit(main())
