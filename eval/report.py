"""A human-readable report of scored predictions: one markdown table per task and a bar chart.

``write_report(scored, out_dir)`` writes ``report.md`` (a summary table in the columns of the paper's
Table 2, then every metric of every task) and ``headline.png`` (headline metric per task, 0..100).
`scored` is what `eval.score.score_dir` returns (or one `score_file` result). Results that carry
``sources`` (eval.sources.summarize; `deca evaluate` adds them) also get the Figure 3 table and chart.
"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Mapping

import matplotlib

from deca.io import atomic_write, write_text
from deca.registry import DECANLP
from eval import sources
from eval.labels import TASK_LABELS
from eval.metrics.registry import get_metric


def _results(scored: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return dict(scored["results"]) if "results" in scored else {scored["task"]: scored}


def _order(tasks) -> list[str]:
    rank = {t: i for i, t in enumerate(DECANLP)}
    return sorted(tasks, key=lambda t: (rank.get(t, len(rank)), t))


def _interval(result: Mapping[str, Any], key: str = "interval") -> str:
    """" [low, high]" (the 95% bootstrap interval, eval.stats) when the result has one."""
    return f" [{result[key][0]:.2f}, {result[key][1]:.2f}]" if result.get(key) else ""


def markdown(scored: Mapping[str, Any]) -> str:
    """The report as markdown text."""
    results = _results(scored)
    tasks = _order(results)
    lines = [f"# Scores on the {scored['split']} split", ""]
    if "decascore" in scored:
        note = " (partial: " + ", ".join(scored["missing"]) + " missing)" if scored["partial"] else ""
        lines += [f"**decaScore: {scored['decascore']:.2f}** of {scored['max']:.0f}{note}", ""]
    lines += ["| task | headline metric | value [95% interval] | n |", "|---|---|---:|---:|"]
    for t in tasks:
        r = results[t]
        lines.append(f"| {t} | {r['headline']['name']} | {r['headline']['value']:.2f}{_interval(r)} | {r['n']} |")
    if "decascore" in scored:
        total = f"**{scored['decascore']:.2f}**{_interval(scored, 'decascore_interval')}"
        lines.append(f"| **decaScore** | sum of {len(scored['tasks'])} | {total} | |")
    if "clean" in scored:
        lines += clean_lines(scored["clean"])
    for t in tasks:
        r = results[t]
        lines += ["", f"## {t}", "", f"{r['n']} examples; headline `{r['headline']['name']}`.", "",
                  "| metric | value | better |", "|---|---:|:---:|"]
        for name, value in r["metrics"].items():
            arrow = "↑" if get_metric(name).higher_is_better else "↓"
            lines.append(f"| {name} | {value:.4f} | {arrow} |")
    figure3 = source_summaries(scored)
    if figure3:
        lines += ["", sources.markdown_table(figure3)]
    return "\n".join(lines) + "\n"


def clean_lines(clean: Mapping[str, Any]) -> list[str]:
    """The scores without the examples `deca contamination` flags (eval.clean): a table per task and the
    decaScore, and the tasks it did not check."""
    lines = ["", "## Without the examples that overlap training data", "",
             f"Leaving out what `deca contamination` flags ({clean['source']}).", "",
             "| task | headline | n | left out |", "|---|---:|---:|---:|"]
    for t in _order(clean["results"]):
        r = clean["results"][t]
        value = f"{r['headline']['value']:.2f}" if r.get("headline") else "-"
        lines.append(f"| {t} | {value} | {r['n']} | {r['excluded']} |")
    note = " (partial)" if clean["partial"] else ""
    lines.append(f"| **decaScore** | **{clean['decascore']:.2f}**{note} | | |")
    if clean["not_checked"]:
        lines += ["", f"Not checked (no contamination output for them): {', '.join(clean['not_checked'])}."]
    return lines


def source_summaries(scored: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{task: eval.sources summary} of the results that carry one, in the paper's task order."""
    results = _results(scored)
    return {t: results[t]["sources"] for t in _order(results) if results[t].get("sources")}


def figure3_chart(scored: Mapping[str, Any], path: str | Path) -> Path:
    """The Figure 3 stacked bars (eval.sources.stacked_chart) of the results that carry sources."""
    title = f"which source answers ({scored['split']}, greedy decoding)"
    return sources.stacked_chart(source_summaries(scored), path, title, labels=TASK_LABELS)


def bar_chart(scored: Mapping[str, Any], path: str | Path) -> Path:
    """Headline metric per task as a PNG bar chart (matplotlib, Agg backend, no display needed)."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = _results(scored)
    tasks = _order(results)
    values = [results[t]["headline"]["value"] for t in tasks]
    labels = [f"{t}\n{results[t]['headline']['name']}" for t in tasks]
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(tasks) + 1), 4.0), dpi=100)
    bars = ax.bar(range(len(tasks)), values, width=0.6, color="#4c72b0")
    ax.set_xlim(-0.75, max(len(tasks), 3) - 0.25)  # a lone bar stays bar-sized
    ax.bar_label(bars, labels=[f"{v:.1f}" for v in values], fontsize=8)
    ax.set_xticks(range(len(tasks)), labels, rotation=45, ha="right", fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("headline metric")
    title = f"{scored['split']}"
    if "decascore" in scored:
        title += f" — decaScore {scored['decascore']:.1f}" + (" (partial)" if scored["partial"] else "")
    ax.set_title(title)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
    finally:
        plt.close(fig)


def write_report(scored: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write report.md and headline.png into `out_dir`; returns their paths."""
    out_dir = Path(out_dir)
    return {"markdown": write_text(out_dir / "report.md", markdown(scored)),
            "chart": bar_chart(scored, out_dir / "headline.png")}


def write_plots(scored: Mapping[str, Any], plots_dir: str | Path,
                curves: Mapping[str, Path] | None = None) -> list[Path]:
    """The files of `dvc plots show`: per_task.csv and per_task.png (headline per task), figure3.csv and
    figure3.png (when the results carry sources), and loss.png / validation.png copied from `curves` (a
    training run's plots) or, without one, an image saying so."""
    plots_dir = Path(plots_dir)
    rows = ["task,metric,score"] + [f"{t},{r['headline']['name']},{r['headline']['value']:.4f}"
                                    for t, r in _results(scored).items()]
    written = [write_text(plots_dir / "per_task.csv", "\n".join(rows) + "\n"),
               bar_chart(scored, plots_dir / "per_task.png")]  # an image: `dvc plots show` needs no internet
    if source_summaries(scored):
        written += [write_text(plots_dir / "figure3.csv", sources.csv_text(source_summaries(scored))),
                    figure3_chart(scored, plots_dir / "figure3.png")]
    for name in ("loss", "validation"):
        src = (curves or {}).get(name)
        target = plots_dir / f"{name}.png"
        if src is not None:
            written.append(atomic_write(target, lambda tmp, src=src: shutil.copyfile(src, tmp)))
        else:
            written.append(note_image(target, f"no {name} curve recorded for this checkpoint"))
    return written


def note_image(path: str | Path, text: str) -> Path:
    """A small PNG that only says `text` (where a plot is expected but there is nothing to plot)."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 1.5))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center")
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=80))
    finally:
        plt.close(fig)
