"""Reading a run's curves back from MLflow, and drawing them: what `deca evaluate`'s plots and the
training job's final plots show.

`history` returns every metric of a run (optionally those under a prefix) as sorted (step, value) lists;
`plot_run` draws the per-task training loss (schedule phase changes marked) and the validation headlines,
with the sum of headlines (the model-selection score) on its own axis. The metric names are those of
train/tracking.py's docstring; this module knows MLflow and matplotlib, nothing of the model.
"""
from __future__ import annotations

from pathlib import Path

from deca.metric_logging import client


def history(uri: str, run_id: str, prefix: str = "") -> dict[str, list[tuple[int, float]]]:
    """Every metric of a run whose name starts with `prefix`, as sorted (step, value) lists."""
    c = client(uri)
    keys = [k for k in c.get_run(run_id).data.metrics if k.startswith(prefix)]
    return {k: sorted((m.step, m.value) for m in c.get_metric_history(run_id, k)) for k in sorted(keys)}


def plot_run(uri: str, run_id: str, out_dir: str | Path) -> list[Path]:
    """Loss curves per task (with phase changes marked) and validation curves, as PNG files."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    hist = history(uri, run_id)
    changes = [step for step, _ in hist.get("phase", [])[1:]]
    written = []
    for name, prefix, ylabel in (("loss", "train/loss/", "training loss (NLL)"),
                                 ("validation", "validation/", "validation metric (0-100)")):
        series = {k: v for k, v in hist.items() if k.startswith(prefix) and (name == "loss" or k.endswith("/headline"))}
        if not series:
            continue
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for key, points in series.items():
            steps, values = zip(*points)
            ax.plot(steps, values, label=key[len(prefix):].removesuffix("/headline"), marker="." if
                    len(points) < 30 else None)
        total = hist.get("validation/score") if name == "validation" and len(series) > 1 else None
        if total:  # the sum of headlines (up to 100 per task) gets its own axis, not the 0-100 one
            twin = ax.twinx()
            twin.plot(*zip(*total), color="black", linestyle=":", label="sum of headlines")
            twin.set_ylabel("sum of headline metrics (right)")
            twin.legend(loc="lower right", fontsize="small")
        for step in changes:
            ax.axvline(step, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xlabel("iteration")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize="small")
        ax.grid(alpha=0.3)
        fig.tight_layout()
        path = out_dir / f"{name}.png"
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    return written
