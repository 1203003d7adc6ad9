"""Which source answers: the paper's Figure 3 (McCann et al., 2018, Section 4.3).

At each answer step MQAN's multi-pointer-generator mixes three distributions with the switch weights of
Eq. 12-13: the vocabulary (gamma), the context pointer ((1-gamma) lambda) and the question pointer
((1-gamma)(1-lambda)); they sum to 1. Figure 3 shows, per task, how often each of the three has the
largest weight over the tokens of the decoded answers. ``summarize(answers)`` computes that from plain
lists (one list per answer, one ``[vocabulary, context, question]`` triple per answer token; the <eos>
step is not an answer token), together with the mean weight of each source, so this module knows
nothing of the model. Shares are percentages of the answer tokens (they sum to 100); mean weights are
on the weights' own 0..1 scale. A tie goes to the earlier source (vocabulary, context, question).

The values are logged as ``<split>/<task>/source/<source>_share`` and ``.../source/<source>_mean_weight``
(plus ``.../source/tokens``); they are no task metric and never enter the decaScore.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from deca.io import atomic_write

SOURCES = ("vocabulary", "context", "question")
LEGEND = ("p(vocab)", "p(context pointer)", "p(question pointer)")  # the paper's legend
COLORS = ("#4c72b0", "#dd8452", "#55a868")
SUM_TOLERANCE = 1e-3  # the three weights of a token sum to 1 up to float rounding
Weights = Sequence[Sequence[Sequence[float]]]  # answers -> tokens -> (vocabulary, context, question)


def check_token(weights: Sequence[float], answer: int, token: int) -> None:
    """Refuse a token's weights that are not three non-negative numbers summing to 1."""
    where = f"answer {answer}, token {token}"
    if len(weights) != len(SOURCES):
        raise ValueError(f"{where}: expected {len(SOURCES)} source weights {SOURCES}, got {len(weights)}")
    if not all(math.isfinite(w) and w >= -SUM_TOLERANCE for w in weights):
        raise ValueError(f"{where}: source weights must be finite and non-negative, got {list(weights)}")
    if abs(sum(weights) - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{where}: source weights must sum to 1, got {list(weights)} (sum {sum(weights):.6f})")


def summarize(answers: Weights) -> dict[str, Any]:
    """Figure 3 of one task: ``{"answers", "tokens", "largest": {source: count}, "share": {source: %},
    "mean_weight": {source: mean}}``; `share` and `mean_weight` are empty when no answer has a token."""
    largest = [0] * len(SOURCES)
    totals = [0.0] * len(SOURCES)
    tokens = 0
    for a, answer in enumerate(answers):
        for t, weights in enumerate(answer):
            check_token(weights, a, t)
            largest[max(range(len(SOURCES)), key=lambda i: (weights[i], -i))] += 1
            for i, w in enumerate(weights):
                totals[i] += w
            tokens += 1
    summary: dict[str, Any] = {"answers": len(answers), "tokens": tokens,
                               "largest": dict(zip(SOURCES, largest)), "share": {}, "mean_weight": {}}
    if tokens:
        summary["share"] = {s: 100.0 * n / tokens for s, n in zip(SOURCES, largest)}
        summary["mean_weight"] = {s: total / tokens for s, total in zip(SOURCES, totals)}
    return summary


def metric_items(summary: Mapping[str, Any]) -> dict[str, float]:
    """A task's summary as metric names under ``source/`` (the ``<split>/<task>/`` prefix is the caller's)."""
    out = {"source/tokens": float(summary["tokens"])}
    out.update({f"source/{s}_share": float(v) for s, v in summary["share"].items()})
    out.update({f"source/{s}_mean_weight": float(v) for s, v in summary["mean_weight"].items()})
    return out


def source_values(split: str, per_task: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """``<split>/<task>/source/...`` for each scored task whose result carries Figure 3's sources."""
    return {f"{split}/{task}/{name}": value for task, result in per_task.items() if result.get("sources")
            for name, value in metric_items(result["sources"]).items()}


def metrics_entry(summary: Mapping[str, Any]) -> dict[str, Any]:
    """A task's summary as the ``source`` object of metrics.json (shares in %, mean weights 0..1)."""
    entry: dict[str, Any] = {"tokens": summary["tokens"]}
    entry.update({f"{s}_share": round(v, 4) for s, v in summary["share"].items()})
    entry.update({f"{s}_mean_weight": round(v, 6) for s, v in summary["mean_weight"].items()})
    return entry


def markdown_table(per_task: Mapping[str, Mapping[str, Any]]) -> str:
    """The Figure 3 table: per task the share of answer tokens each source gives, then the mean weights."""
    lines = ["## Which source answers (Figure 3)", "",
             "Share of answer tokens whose largest switch weight is the vocabulary (gamma), the context pointer "
             "((1-gamma) lambda) or the question pointer ((1-gamma)(1-lambda)); mean weights in brackets.", "",
             "| task | answer tokens | vocabulary | context | question |", "|---|---:|---:|---:|---:|"]
    for task, s in per_task.items():
        if not s["tokens"]:
            lines.append(f"| {task} | 0 | - | - | - |")
            continue
        cells = [f"{s['share'][src]:.1f}% ({s['mean_weight'][src]:.2f})" for src in SOURCES]
        lines.append(f"| {task} | {s['tokens']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def csv_text(per_task: Mapping[str, Mapping[str, Any]]) -> str:
    """One row per task: tokens, the three shares (%) and the three mean weights (empty without tokens)."""
    head = ["task", "tokens"] + [f"{s}_share" for s in SOURCES] + [f"{s}_mean_weight" for s in SOURCES]
    rows = [",".join(head)]
    for task, s in per_task.items():
        values = [f"{s['share'][src]:.4f}" if s["tokens"] else "" for src in SOURCES]
        values += [f"{s['mean_weight'][src]:.6f}" if s["tokens"] else "" for src in SOURCES]
        rows.append(",".join([task, str(s["tokens"])] + values))
    return "\n".join(rows) + "\n"


def wrap(name: str, width: int = 12) -> str:
    """A task name broken after '.' or '_' into lines of about `width` characters (axis labels)."""
    lines = [""]
    for piece in re.findall(r"[^._]+[._]?|[._]", name):
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def stacked_chart(per_task: Mapping[str, Mapping[str, Any]], path: str | Path, title: str = "",
                  labels: Mapping[str, str] | None = None) -> Path:
    """Figure 3 in the paper's style: one bar per task, stacked to 1.0 from the three sources' shares
    (PNG, Agg backend). `labels` renames tasks on the axis (e.g. the paper's short names)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tasks = list(per_task)
    fig, ax = plt.subplots(figsize=(max(4.5, 0.9 * len(tasks) + 2.5), 3.6), dpi=100)
    bottom = [0.0] * len(tasks)
    for src, legend, color in zip(SOURCES, LEGEND, COLORS):
        heights = [per_task[t]["share"].get(src, 0.0) / 100.0 for t in tasks]
        bars = ax.bar(range(len(tasks)), heights, 0.6, bottom=bottom, label=legend, color=color)
        ax.bar_label(bars, labels=[f"{h:.0%}" if h >= 0.06 else "" for h in heights], label_type="center",
                     fontsize=7, color="white")
        bottom = [b + h for b, h in zip(bottom, heights)]
    names = [wrap((labels or {}).get(t, t)) for t in tasks]
    ax.set_xticks(range(len(tasks)), [f"{n}\n{per_task[t]['tokens']} tok" for n, t in zip(names, tasks)],
                  fontsize=8)
    ax.set_xlim(-0.75, max(len(tasks), 3) - 0.25)
    ax.set_ylim(0, 1.0)
    ax.set_yticks([0.0, 0.5, 1.0])
    ax.set_ylabel("share of answer tokens")
    ax.legend(title="largest weight", title_fontsize=7, fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              frameon=False)
    if title:
        ax.set_title(title, fontsize=9)
    fig.tight_layout()
    try:
        return atomic_write(path, lambda tmp: fig.savefig(tmp, format="png"))
    finally:
        plt.close(fig)
