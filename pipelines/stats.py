"""Per-task statistics of the processed data: examples, tokens per field and drops by reason, per split.

``<out>/<task>/stats.json`` looks like::

    {"task": "sst",
     "options": {...the task options used...},
     "splits": {"train": {"examples": 6920,
                          "tokens": {"context": {"sum": 132951, "mean": 19.213, "max": 61}, "question": ..., "answer": ...},
                          "dropped": {"reason": count, ...}},
                ...}}

The token statistics are computed in Beam by `SplitStatsFn` (a CombineFn over per-shard partial
`SplitTotals`, so no split is ever held in memory); `task_stats` assembles the file and `format_table`
prints the end-of-run summary.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402

from deca.registry import SPLITS

FIELDS = ("context", "question", "answer")


def lengths(row: Mapping[str, Any]) -> tuple[int, int, int]:
    """Token counts of the three text fields of a processed row."""
    return tuple(len(row[f"{field}_tokens"]) for field in FIELDS)  # type: ignore[return-value]


@dataclass
class SplitTotals:
    """Examples and token counts of (part of) a split: the statistics accumulator, combined across shards.

    `sums` and `maxima` hold, per field of FIELDS, the total and the largest token count of one example."""

    examples: int = 0
    sums: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))
    maxima: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIELDS, 0))

    @property
    def tokens(self) -> int:
        """Tokens of every field of every example counted."""
        return sum(self.sums.values())

    def add(self, counts: Sequence[int]) -> "SplitTotals":
        """Count one example with these token counts (in FIELDS order) in place; returns self."""
        self.examples += 1
        for name, n in zip(FIELDS, counts):
            self.sums[name] += n
            self.maxima[name] = max(self.maxima[name], n)
        return self

    def merge(self, other: "SplitTotals") -> "SplitTotals":
        """Add `other`'s counts in place; returns self."""
        self.examples += other.examples
        for name in FIELDS:
            self.sums[name] += other.sums[name]
            self.maxima[name] = max(self.maxima[name], other.maxima[name])
        return self

    def summary(self) -> dict[str, Any]:
        """{examples, tokens: {field: {sum, mean, max}}}: a split's entry of stats.json (without its drops)."""
        n = self.examples
        return {
            "examples": n,
            "tokens": {
                name: {"sum": self.sums[name], "mean": round(self.sums[name] / n, 3) if n else 0.0,
                       "max": self.maxima[name]}
                for name in FIELDS
            },
        }


class SplitStatsFn(beam.CombineFn):
    """Combine partial totals (one `SplitTotals` per written shard) into a split's `SplitTotals.summary`."""

    def create_accumulator(self) -> SplitTotals:
        return SplitTotals()

    def add_input(self, acc: SplitTotals, partial: SplitTotals) -> SplitTotals:
        return acc.merge(partial)

    def merge_accumulators(self, accs: Iterable[SplitTotals]) -> SplitTotals:
        out = SplitTotals()
        for acc in accs:
            out.merge(acc)
        return out

    def extract_output(self, acc: SplitTotals) -> dict[str, Any]:
        return acc.summary()


def empty_split() -> dict[str, Any]:
    """The statistics of a split without any example."""
    return SplitTotals().summary()


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
