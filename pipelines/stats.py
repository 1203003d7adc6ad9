"""Per-task statistics of the processed data: examples, tokens per field and drops by reason, per split.

``<out>/<task>/stats.json`` looks like::

    {"task": "sst",
     "options": {...the task options used...},
     "splits": {"train": {"examples": 6920,
                          "tokens": {"context": {"sum": 132951, "mean": 19.213, "max": 61}, "question": ..., "answer": ...},
                          "dropped": {"reason": count, ...}},
                ...}}

The token statistics are computed in Beam by `SplitStatsFn` (a CombineFn over per-batch partial
accumulators, so no split is ever held in memory); `task_stats` assembles the file and `format_table` prints the end-of-run summary.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402

from deca.registry import SPLITS

FIELDS = ("context", "question", "answer")


def lengths(row: Mapping[str, Any]) -> tuple[int, int, int]:
    """Token counts of the three text fields of a processed row."""
    return tuple(len(row[f"{field}_tokens"]) for field in FIELDS)  # type: ignore[return-value]


def new_accumulator() -> list[int]:
    """``[examples, sum_context, sum_question, sum_answer, max_context, max_question, max_answer]``."""
    return [0] * (1 + 2 * len(FIELDS))


def add_lengths(acc: list[int], counts: tuple[int, ...]) -> list[int]:
    """Count one example with the given token counts into `acc` (in place)."""
    k = len(FIELDS)
    acc[0] += 1
    for i, n in enumerate(counts):
        acc[1 + i] += n
        if n > acc[1 + k + i]:
            acc[1 + k + i] = n
    return acc


def merge_into(acc: list[int], other: list[int]) -> list[int]:
    k = len(FIELDS)
    acc[0] += other[0]
    for i in range(k):
        acc[1 + i] += other[1 + i]
        acc[1 + k + i] = max(acc[1 + k + i], other[1 + k + i])
    return acc


class SplitStatsFn(beam.CombineFn):
    """Combine partial accumulators (one per processed batch, see `add_lengths`) into
    {examples, tokens: {field: {sum, mean, max}}}."""

    def create_accumulator(self) -> list[int]:
        return new_accumulator()

    def add_input(self, acc: list[int], partial: list[int]) -> list[int]:
        return merge_into(acc, partial)

    def merge_accumulators(self, accs: Iterable[list[int]]) -> list[int]:
        out = new_accumulator()
        for acc in accs:
            merge_into(out, acc)
        return out

    def extract_output(self, acc: list[int]) -> dict[str, Any]:
        return summarize(acc)


def summarize(acc: list[int]) -> dict[str, Any]:
    """The output of `SplitStatsFn` for an accumulator (also used for splits without any example)."""
    n, k = acc[0], len(FIELDS)
    return {
        "examples": n,
        "tokens": {
            field: {"sum": acc[1 + i], "mean": round(acc[1 + i] / n, 3) if n else 0.0, "max": acc[1 + k + i]}
            for i, field in enumerate(FIELDS)
        },
    }


def empty_split() -> dict[str, Any]:
    return summarize(new_accumulator())


def task_stats(task: str, splits: Iterable[str], split_stats: Mapping[str, dict], drops: Mapping[str, Mapping[str, int]],
               options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Assemble stats.json for one task from per-split combine outputs and drop counts (splits in SPLITS order)."""
    order = {s: i for i, s in enumerate(SPLITS)}
    out: dict[str, Any] = {"task": task, "options": dict(options or {}), "splits": {}}
    for split in sorted(splits, key=lambda s: order.get(s, len(order))):
        entry = dict(split_stats.get(split) or empty_split())
        entry["dropped"] = dict(sorted((drops.get(split) or {}).items()))
        out["splits"][split] = entry
    return out


def merge_stats(old: Mapping[str, Any] | None, new: Mapping[str, Any], carried: Iterable[str]) -> dict[str, Any]:
    """stats.json of a partial rerun: the new splits plus the carried-over splits' entries from `old`."""
    merged = json.loads(json.dumps(new))
    carried = list(carried)
    if old and carried:
        for split in carried:
            if split in old.get("splits", {}):
                merged["splits"][split] = old["splits"][split]
        order = {s: i for i, s in enumerate(SPLITS)}
        merged["splits"] = dict(sorted(merged["splits"].items(), key=lambda kv: order.get(kv[0], len(order))))
    return merged


def dump(stats: Mapping[str, Any]) -> str:
    return json.dumps(stats, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def load(path: str | Path) -> dict[str, Any] | None:
    path = Path(path)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def format_table(stats_by_task: Mapping[str, Mapping[str, Any]]) -> str:
    """A plain-text table: one line per task split with examples, drops and mean tokens per field."""
    header = ("task", "split", "examples", "dropped", "ctx tok", "q tok", "ans tok", "drop reasons")
    lines = [header]
    for task, stats in stats_by_task.items():
        for split, s in stats["splits"].items():
            drops = s.get("dropped", {})
            lines.append((
                task, split, f"{s['examples']:,}", f"{sum(drops.values()):,}",
                *(f"{s['tokens'][f]['mean']:.1f}" for f in FIELDS),
                ", ".join(f"{r}={n}" for r, n in drops.items()) or "-",
            ))
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(header))]
    right = {2, 3, 4, 5, 6}
    return "\n".join(
        "  ".join(str(c).rjust(widths[i]) if i in right else str(c).ljust(widths[i]) for i, c in enumerate(row)).rstrip()
        for row in lines
    )
