"""Comparing runs task by task, like the paper's Table 3: the work behind `deca compare`.

A row is one run: an MLflow run, a DVC experiment, a metrics file written by `deca evaluate`, or a
row of the paper's Table 3. Each row holds the headline metric of every task it scored and the
decaScore (the sum over the decaNLP tasks, flagged partial when some of the ten are missing).
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from deca.errors import ConfigError, DataError, DecaError
from deca.io import atomic_write
from deca.params_file import load_params_file
from deca.registry import DECANLP, all_tasks
from eval.labels import TASK_LABELS

log = logging.getLogger(__name__)

# McCann et al. (2018), Table 2, single-task training: the architecture steps (S2S, then +SAtt, +CAtt, +QPtr) and
# their validation metrics on the four tasks the experiments run.
TABLE2_VARIANTS = ("s2s", "satt", "catt", "qptr")
TABLE2_NAMES = {"s2s": "S2S", "satt": "+SAtt", "catt": "+CAtt", "qptr": "+QPtr"}
PAPER_TABLE2 = {"sst": (86.4, 86.8, 86.2, 88.5), "srl": (63.5, 67.8, 74.8, 77.9), "woz.en": (85.3, 86.0, 86.5, 88.0),
                "schema": (43.9, 46.3, 40.4, 48.8)}

# McCann et al. (2018), Table 3: validation metrics of MQAN under each training strategy (decaNLP order).
PAPER_TABLE3 = {
    "fully_joint": ([70.8, 16.1, 23.9, 70.5, 86.2, 75.8, 28.0, 80.6, 62.0, 48.8], 562.7),
    "curriculum": ([43.4, 4.3, 21.3, 58.9, 84.5, 70.6, 24.6, 81.9, 68.6, 41.5], 499.6),
    "anti_curriculum_squad": ([74.3, 13.7, 24.6, 69.2, 86.4, 77.6, 34.7, 84.1, 58.7, 48.4], 571.7),
    "anti_curriculum_squad_iwslt_cnn": ([74.5, 18.7, 20.8, 69.6, 83.6, 77.5, 30.1, 81.7, 54.8, 34.9], 546.2),
    "anti_curriculum_squad_iwslt_cnn_mnli": ([74.6, 19.0, 21.6, 72.7, 86.8, 75.1, 37.7, 85.6, 42.6, 41.5], 557.2),
}


@dataclass
class Row:
    """One compared run."""

    label: str
    source: str  # paper | mlflow | dvc | file
    scores: dict[str, float]  # task -> headline metric (0..100)
    strategy: str = ""
    decascore: float | None = None  # None: computed from `scores`
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> float:
        if self.decascore is not None:
            return float(self.decascore)
        return sum(v for t, v in self.scores.items() if t in DECANLP)

    @property
    def partial(self) -> bool:
        return self.source != "paper" and any(t not in self.scores for t in DECANLP)


def paper_rows() -> list[Row]:
    """The five strategies of the paper's Table 3."""
    return [Row("paper (Table 3)", "paper", dict(zip(DECANLP, values)), strategy=name, decascore=total)
            for name, (values, total) in PAPER_TABLE3.items()]


# ---------------------------------------------------------------------------------- metrics documents

def scores_from_metrics(doc: Mapping[str, Any]) -> dict[str, float]:
    """Task -> headline value from a `deca evaluate` / `deca score` metrics document."""
    tasks = doc.get("tasks") or {}
    return {t: float(v["headline"]) for t, v in tasks.items() if isinstance(v, Mapping) and "headline" in v}


def row_from_metrics_file(path: str | Path, label: str | None = None, params_path: str | Path | None = None) -> Row:
    """A row from eval/metrics.json; the strategy comes from the params file when given."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(path, "metrics file not found", fix="run `deca evaluate` (or `dvc repro evaluate`) first") from None
    except json.JSONDecodeError as exc:
        raise DataError(path, f"not valid JSON ({exc.msg})", line=exc.lineno, fix="rerun `deca evaluate`") from None
    strategy = ""
    if params_path is not None:
        raw = load_params_file(params_path)
        strategy = ((raw or {}).get("train") or {}).get("strategy", "")
    scores = scores_from_metrics(doc)
    if not scores:
        raise DataError(path, "no per-task headline metrics in it", fix="use the metrics file `deca evaluate` writes")
    return Row(label or "this run", "file", scores, strategy=strategy,
               meta={"path": str(path), "split": doc.get("split"), "iteration": doc.get("iteration")})


# ------------------------------------------------------------------------------------ DVC experiments

def dvc_exp_show(repo: str | Path = ".", dvc: str | None = None, all_commits: bool = False) -> list[dict]:
    """`dvc exp show --json` of `repo`, parsed."""
    exe = dvc or _venv_tool("dvc")
    cmd = [exe, "exp", "show", "--json"] + (["--all-commits"] if all_commits else [])
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    proc = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise DecaError(f"`{' '.join(cmd)}` failed in {repo}: {proc.stderr.strip()[-800:]}")
    start = proc.stdout.find("[")
    return json.loads(proc.stdout[start:]) if start >= 0 else []


def _venv_tool(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def rows_from_dvc(show: Sequence[Mapping[str, Any]], metrics_path: str = "eval/metrics.json",
                  names: Sequence[str] | None = None, include_baseline: bool = False) -> list[Row]:
    """Rows of the experiments in `dvc exp show --json` output that have the metrics file.

    `names` keeps only those experiments (exp names or revision prefixes), in that order; otherwise
    the rows go oldest first. The baselines (commits) come too with `include_baseline`, the workspace
    never (it duplicates the last applied experiment).
    """
    rows = []
    for entry in show:
        if entry.get("rev") == "workspace":
            continue
        candidates = [(entry, True)] + [(rev, False) for exp in entry.get("experiments") or []
                                        for rev in exp.get("revs") or []]
        for item, is_baseline in candidates:
            name = item.get("name") or (item.get("rev") or "")[:7]
            if is_baseline and not include_baseline:
                continue
            if names and not any(n == name or (item.get("rev") or "").startswith(n) for n in names):
                continue
            data = item.get("data") or {}
            metrics = ((data.get("metrics") or {}).get(metrics_path) or {}).get("data")
            if not metrics:
                log.info("DVC %s %s: no %s, skipped", "commit" if is_baseline else "experiment", name, metrics_path)
                continue
            params = ((data.get("params") or {}).get("params.yaml") or {}).get("data") or {}
            strategy = (params.get("train") or {}).get("strategy", "")
            rows.append(Row(name, "dvc", scores_from_metrics(metrics), strategy=strategy,
                            meta={"rev": item.get("rev"), "timestamp": data.get("timestamp"),
                                  "iterations": (params.get("train") or {}).get("iterations")}))
    if names:
        def rank(r: Row) -> int:
            return next(i for i, n in enumerate(names) if n == r.label or (r.meta["rev"] or "").startswith(n))

        return sorted(rows, key=rank)
    return sorted(rows, key=lambda r: r.meta["timestamp"] or "")


# ---------------------------------------------------------------------------------------- MLflow runs

EVALUATED_TAG = "evaluated.{split}"  # set by `deca evaluate` to the iteration of the checkpoint it scored


def mlflow_scores(client, run, split: str, tasks: Iterable[str] | None = None) -> tuple[dict[str, float], str]:
    """Headline per task from a run's ``<split>/<task>/<metric>`` metrics (one namespace for training's
    validation rounds and `deca evaluate`). When `deca evaluate` scored the run (tag evaluated.<split>), its
    values win: the last value logged at the evaluated iteration; else the latest validation round.
    `tasks`: those to read (None: every task the run has metrics of, custom tasks too). A task not registered
    here (a custom task of other params) is read from its ``<split>/<task>/headline``.
    Returns (scores, which results were used: "evaluate" or "training")."""
    registered = all_tasks()
    evaluated = run.data.tags.get(EVALUATED_TAG.format(split=split))
    scores = {}
    for task in run_tasks(run.data.metrics, split) if tasks is None else tasks:
        metric = registered[task].metric if task in registered else "headline"
        key = f"{split}/{task}/{metric}"
        if key not in run.data.metrics:
            continue
        scores[task] = float(run.data.metrics[key])
        if evaluated is not None:
            at_step = [m for m in client.get_metric_history(run.info.run_id, key) if m.step == int(evaluated)]
            if at_step:
                scores[task] = float(max(at_step, key=lambda m: m.timestamp).value)
    return scores, ("evaluate" if evaluated is not None else "training") if scores else ""


def run_tasks(metrics: Mapping[str, float], split: str) -> list[str]:
    """The tasks a run logged metrics of on `split` (``<split>/<task>/...`` keys), decaNLP order first."""
    found = {key.split("/")[1] for key in metrics if key.startswith(f"{split}/") and key.count("/") >= 2}
    return [t for t in DECANLP if t in found] + sorted(found - set(DECANLP))


def rows_from_mlflow(tracking_uri: str, experiments: Sequence[str] = (), run_ids: Sequence[str] = (),
                     filter_string: str = "", split: str = "validation", tasks: Sequence[str] | None = None,
                     max_results: int = 1000) -> list[Row]:
    """Rows of MLflow runs: given run ids, or the runs of `experiments` matching `filter_string`. `tasks`:
    the tasks to read (None: all a run has). Runs of the same name are told apart by start time and run id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=tracking_uri)
    if run_ids:
        runs = [client.get_run(r) for r in run_ids]
    else:
        ids = []
        for name in experiments:
            exp = client.get_experiment_by_name(name)
            if exp is None:
                known = ", ".join(e.name for e in client.search_experiments()) or "none"
                raise ConfigError(f"no MLflow experiment {name!r} at {tracking_uri} (experiments: {known})")
            ids.append(exp.experiment_id)
        runs = client.search_runs(ids, filter_string=filter_string, max_results=max_results,
                                  order_by=["attributes.start_time ASC"])
    rows = [row for row in (mlflow_row(client, run, split, tasks) for run in runs) if row is not None]
    return label_apart(rows)


def mlflow_row(client, run, split: str, tasks: Sequence[str] | None) -> Row | None:
    """The row of one MLflow run; None (logged) when it has no metrics of `split`."""
    scores, keys = mlflow_scores(client, run, split, tasks)
    name = run.info.run_name or run.info.run_id[:8]
    if not scores:
        log.info("MLflow run %s (%s): no %s metrics, skipped", name, run.info.run_id, split)
        return None
    strategy = run.data.params.get("train.strategy") or run.data.tags.get("strategy", "")
    if strategy not in ("", "fully_joint", "single_task") and "phase.1" not in run.data.tags:
        strategy += " (first phase only)"  # a curriculum that never reached its joint phase
    started = run.info.start_time
    return Row(name, "mlflow", scores, strategy=strategy,
               meta={"run_id": run.info.run_id, "status": run.info.status, "metrics": keys,
                     "dvc_exp": run.data.tags.get("dvc.exp_name", ""),
                     "start_time": _local_time(started) if started else None})


def _local_time(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def label_apart(rows: list[Row]) -> list[Row]:
    """Rows sharing a run name (every run of the DVC pipeline is `pipeline`) get their start time and short
    run id in the label: ``pipeline (2026-01-03 14:05, 3f2a1b9c)``."""
    names = [r.label for r in rows]
    for r in rows:
        if names.count(r.label) > 1:
            when = f"{r.meta['start_time']}, " if r.meta.get("start_time") else ""
            r.label = f"{r.label} ({when}{r.meta['run_id'][:8]})"
    return rows


# ------------------------------------------------------------------------------------------- outputs

def columns(rows: Sequence[Row], tasks: Sequence[str] | None = None) -> list[str]:
    """The task columns: `tasks` if given, else every decaNLP task any row has (paper order), then others."""
    if tasks:
        return list(tasks)
    present = {t for r in rows for t in r.scores}
    return [t for t in DECANLP if t in present] + sorted(present - set(DECANLP))


def markdown(rows: Sequence[Row], tasks: Sequence[str], title: str = "") -> str:
    """A Table-3-like markdown table: one row per run, one column per task, then the decaScore."""
    head = ["run", "strategy"] + [TASK_LABELS.get(t, t) for t in tasks] + ["decaScore"]
    lines = ([f"# {title}", ""] if title else []) + ["| " + " | ".join(head) + " |",
                                                      "|" + "---|" * 2 + "---:|" * (len(tasks) + 1)]
    for r in rows:
        cells = [r.label, r.strategy or "-"]
        cells += [f"{r.scores[t]:.1f}" if t in r.scores else "-" for t in tasks]
        cells.append(f"{r.total:.1f}" + (" (partial)" if r.partial else ""))
        lines.append("| " + " | ".join(cells) + " |")
    if any(r.partial for r in rows):
        lines += ["", "(partial): the sum over the decaNLP tasks that run scored; the others count as missing."]
    return "\n".join(lines) + "\n"


def text_table(rows: Sequence[Row], tasks: Sequence[str]) -> str:
    """The same table aligned for a terminal."""
    head = ["run", "strategy"] + [TASK_LABELS.get(t, t) for t in tasks] + ["decaScore"]
    body = [[r.label, r.strategy or "-"] + [f"{r.scores[t]:.1f}" if t in r.scores else "-" for t in tasks]
            + [f"{r.total:.1f}" + ("*" if r.partial else "")] for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body)]
    fmt = lambda cells: "  ".join(c.ljust(w) if i < 2 else c.rjust(w)  # noqa: E731
                                  for i, (c, w) in enumerate(zip(cells, widths)))
    out = [fmt(head), fmt(["-" * w for w in widths])] + [fmt(b) for b in body]
    if any(r.partial for r in rows):
        out.append("* partial: not all ten decaNLP tasks scored")
    return "\n".join(out)


def plot(rows: Sequence[Row], tasks: Sequence[str], path: str | Path) -> Path:
    """Grouped bars: headline per task for each run, and the decaScores beside them (PNG, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(len(rows), 1)
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(max(8.0, 1.1 * len(tasks) + 4), 4.8),
                                  gridspec_kw={"width_ratios": [max(len(tasks), 1), 1.6]})
    width = 0.8 / n
    for i, r in enumerate(rows):
        xs = [j + (i - (n - 1) / 2) * width for j in range(len(tasks))]
        style = {"color": f"C{i % 10}", "hatch": "//" if r.source == "paper" else None,
                 "alpha": 0.6 if r.source == "paper" else 1.0}
        label = f"{i + 1}. {r.label}" + (f" ({r.strategy})" if r.strategy and r.strategy not in r.label else "")
        ax.bar(xs, [r.scores.get(t, 0.0) for t in tasks], width, label=label, **style)
        ax2.bar(i, r.total, 0.8, **style)
    ax.set_xticks(range(len(tasks)), [TASK_LABELS.get(t, t) for t in tasks], rotation=30, ha="right")
    ax.set_ylim(0, 100)
    ax.set_ylabel("headline metric (0-100)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="x-small", ncol=1 if n <= 4 else 2)
    ax2.set_xticks(range(len(rows)), [str(i + 1) for i in range(len(rows))])
    ax2.set_xlabel("run (legend order)")
    ax2.set_title("decaScore", fontsize="medium")
    ax2.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=100))
    plt.close(fig)
    return Path(path)


def to_json(rows: Sequence[Row], tasks: Sequence[str]) -> dict:
    return {"tasks": list(tasks),
            "rows": [{"label": r.label, "source": r.source, "strategy": r.strategy, "scores": r.scores,
                      "decascore": r.total, "partial": r.partial, **({"meta": r.meta} if r.meta else {})}
                     for r in rows]}
