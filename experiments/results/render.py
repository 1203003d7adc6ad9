"""Rendering shared by the page modules: templates, Markdown tables, numbers, intervals and verdicts.

A template is Markdown with ``{{name}}`` placeholders; `fill` refuses an unknown placeholder and a value no
placeholder uses, so a page cannot silently keep a typed figure or drop a generated one.
"""
from __future__ import annotations

import math
import re
import statistics
from pathlib import Path
from typing import Iterable, Sequence

from eval import clustered
from eval.stats import Interval, seed_difference, seed_interval
from eval.steps import Judged
from eval.verdict import (FAILS, INCONCLUSIVE, NOT_TESTED, RISING_UNKNOWN, UNDERPOWERED, at_floor, below_floor,
                          power_note, rising_unknown, still_rising, verdict)

TEMPLATES = Path(__file__).resolve().parent / "templates"
PLACEHOLDER = re.compile(r"\{\{([a-z0-9_]+)\}\}")
MIN_SEEDS = 3  # a verdict from fewer seeds a side is said with its seed count


class TemplateError(ValueError):
    """A template and its values do not match."""


def fill(template: str, values: dict[str, str]) -> str:
    """`template` with every ``{{name}}`` replaced by values[name]; TemplateError on a missing or unused one."""
    used = set(PLACEHOLDER.findall(template))
    missing, unused = used - set(values), set(values) - used
    if missing or unused:
        raise TemplateError(f"placeholders without a value: {sorted(missing)}; values without a place: {sorted(unused)}")
    return PLACEHOLDER.sub(lambda m: str(values[m.group(1)]), template)


def template(name: str) -> str:
    """The text of experiments/results/templates/<name>."""
    return (TEMPLATES / name).read_text(encoding="utf-8")


def table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str = "") -> str:
    """A Markdown table; `align` gives per column 'l' or 'r' (default: the first left, the rest right)."""
    align = align or "l" + "r" * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def num(value: float | None, digits: int = 1, sign: bool = False) -> str:
    """A figure with `digits` decimals ('-' for None); `sign`: always with + or -."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def mean_sd(values: Sequence[float], digits: int = 1) -> str:
    """'mean ± sd' over seeds ('mean' alone for one)."""
    if len(values) < 2:
        return num(values[0], digits) if values else "-"
    return f"{statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def floor_cell(found: dict | None, digits: int = 1) -> str:
    """A task's floor from floors.json: '50.9 (constant answer)'; '-' where the record has none."""
    if not found:
        return "-"
    return f"{found['floor']:.{digits}f} ({found['answerer']})"


def floor_of(found: dict | None) -> float | None:
    """The value of a task's floor from floors.json (None where the record has none)."""
    return None if not found else found["floor"]


def interval(change: Interval, digits: int = 1) -> str:
    """'+1.2 [-0.3, +2.7]', or '+1.2 [unbounded]' when a side has one run."""
    if math.isinf(change.low) or math.isinf(change.high):
        return f"{change.value:+.{digits}f} [unbounded: one run a side]"
    return f"{change.value:+.{digits}f} [{change.low:+.{digits}f}, {change.high:+.{digits}f}]"


def rising_until(curve: Sequence[Sequence[float]], upto: float | None = None) -> bool:
    """eval.verdict.still_rising on a curve of [iteration, ..., value] points, cut at iteration `upto` (the point a
    comparison reads it at; default: its end), whose budget that iteration is."""
    points = [(p[0], p[-1]) for p in curve if upto is None or p[0] <= upto]
    return still_rising(points, upto)


def judge(before: Sequence[float], after: Sequence[float], paper: float, *, floor: float | None = None,
          rising: Sequence[bool] = (), paired: bool = False, digits: int = 1) -> tuple[Interval, str]:
    """The change of the seed means (after - before) with its Welch interval (`paired`: the t interval of the
    per-seed differences, the sides listed seed by seed), and eval/verdict.py's verdict with why: the side
    wholly below its floor ("fails"), the side reaching it, the rising curve, or the seeds when fewer than
    MIN_SEEDS. `floor`: the task's strongest trivial floor (docs/results/records/floors.json), said with
    `digits` decimals."""
    if paired and len(before) != len(after):
        raise ValueError("paired sides need one value per seed each")
    change = seed_interval([b - a for a, b in zip(before, after)]) if paired else seed_difference(before, after)
    floors = [at_floor(seed_interval(side), floor) for side in (before, after)]
    below = [below_floor(seed_interval(side), floor) for side in (before, after)]
    said = verdict(change, paper, floors=floors, rising=rising, below=below)
    reasons = []
    if said == FAILS:
        reasons.append(f"a side's interval lies wholly below the {floor:.{digits}f} floor")
    elif any(floors):
        single = min(len(before), len(after)) < 2
        reasons.append(f"one run a side gives no interval clear of the {floor:.{digits}f} floor" if single
                       else f"a side's interval reaches the {floor:.{digits}f} floor")
    if any(rising):
        reasons.append("a validation curve still rising over the last third of its budget")
    if rising_unknown(rising, said):
        reasons.append(RISING_UNKNOWN)
    if said == INCONCLUSIVE and min(len(before), len(after)) < MIN_SEEDS:
        n = min(len(before), len(after))
        reasons.append(f"{n} seed{'s' if n != 1 else ''} a side")
    return change, said + (f": {'; '.join(reasons)}" if reasons else "")


RISING = "a validation curve still rising over the last third of its budget"


def reasons(judged: Judged, unit: str | None = None) -> list[str]:
    """Why a step got its verdict, in the page's words, and how its interval was made (`unit`: what a cluster
    is, for the clustered interval)."""
    step, said, out = judged.step, judged.verdict, []
    if said == FAILS:
        out.append(f"a side's interval lies wholly below the {step.floor:.1f} floor")
    if said == NOT_TESTED and any(at_floor(s.interval, step.floor) for s in judged.sides):
        single = any(math.isinf(s.interval.low) for s in judged.sides)
        out.append(f"one run a side gives no interval clear of the {step.floor:.1f} floor" if single
                   else f"a side's interval reaches the {step.floor:.1f} floor")
    if said == NOT_TESTED and any(step.rising):
        out.append(RISING)
    if said == UNDERPOWERED:
        out.append(power_note(judged.mde, step.paper))
    if rising_unknown(step.rising, said):
        out.append(RISING_UNKNOWN)
    method = judged.change.method
    out.append(f"clustered by {unit}" if method == clustered.CLUSTERED and unit else method)
    return out


def verdict_cell(judged: Judged, unit: str | None = None) -> str:
    """'**verdict**: reason; reason; how the interval was made'."""
    return f"**{judged.verdict}**: " + "; ".join(reasons(judged, unit))


def mde_cell(judged: Judged) -> str:
    """The step's minimum detectable effect at 80% power ('unbounded' with one run a side)."""
    return "unbounded" if math.isinf(judged.mde) else num(judged.mde)


def p_cell(judged: Judged) -> str:
    """Holm's adjusted p-value over the table's steps."""
    return f"{judged.adjusted_p:.3f}" if judged.adjusted_p >= 0.001 else "<0.001"
