"""The promotion gate: is a candidate model really better than the one an alias points at?

Both were evaluated by `deca evaluate` on the same examples (their predictions directories, with each
example's statistics); `evidence` compares them with the project's paired bootstrap (eval.paired: candidate
minus holder, per task and for the decaScore, 95% intervals) and applies the rule:

- the 95% lower bound of the decaScore difference is above 0 (the gain is not noise), and
- no task's lower bound falls below minus its non-inferiority margin (params register.margins, in points of
  the task's headline; ``default`` for the tasks not named): a gain elsewhere does not buy a clear loss.

Both sides must cover the same tasks. `refusal` is the one line that says why a candidate was refused.
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from deca.errors import ConfigError, DataError
from deca.registry import all_tasks
from eval.labels import TASK_LABELS
from eval.paired import paired, read_run

RULE = ("promote only if the paired 95% lower bound of decaScore(candidate) - decaScore(holder) is above 0 and no "
        "task's lower bound is below minus its non-inferiority margin")
DEFAULT_MARGIN = 1.0


def margin_of(task: str, margins: Mapping[str, float]) -> float:
    """The non-inferiority margin (points) of `task`: its own, else margins['default'], else DEFAULT_MARGIN."""
    return float(margins.get(task, margins.get("default", DEFAULT_MARGIN)))


def check_margins(margins: Mapping[str, float]) -> None:
    """ConfigError naming a register.margins key that is neither a registered task nor 'default'."""
    unknown = sorted(k for k in margins if k != "default" and k not in all_tasks())
    if unknown:
        raise ConfigError(f"register.margins: unknown task(s) {', '.join(unknown)} (`deca ls` lists the tasks; "
                          "'default' is the margin of the others)")


def same_tasks(candidate: Sequence[str | Path], holder: Sequence[str | Path]) -> None:
    """DataError naming the predictions directory whose tasks differ from the other side's."""
    a, b = set(read_run(holder[0])), set(read_run(candidate[0]))
    if a != b:
        only = sorted(a ^ b)
        where = candidate[0] if b - a or not a - b else holder[0]
        raise DataError(Path(where), f"the candidate and the holder were evaluated on other tasks ({', '.join(only)} "
                        "on one side only)", fix="evaluate both on the same tasks and split")


def evidence(candidate: Sequence[str | Path], holder: Sequence[str | Path], margins: Mapping[str, float],
             replicates: int = 1000, seed: int = 0) -> dict:
    """The comparison and the decision as a JSON-ready dict: rule, per key (tasks, 'decascore') the
    difference candidate - holder with its interval, each task's margin, `accepted` and `reasons`."""
    check_margins(margins)
    same_tasks(candidate, holder)
    found = paired(holder, candidate, replicates=replicates, seed=seed)
    rows = {key: {"diff": row["diff"], "candidate": row["b"], "holder": row["a"],
                  **({} if key == "decascore" else {"margin": margin_of(key, margins)})}
            for key, row in found["rows"].items()}
    reasons = []
    score = rows.get("decascore")
    if score is not None and not score["diff"]["low"] > 0:
        reasons.append(("decascore", score["diff"], None))
    for key, row in rows.items():
        if key != "decascore" and row["diff"]["low"] < -row["margin"]:
            reasons.append((key, row["diff"], row["margin"]))
    return {"rule": RULE, "candidate": [str(d) for d in candidate], "holder": [str(d) for d in holder],
            "replicates": replicates, "seed": seed, "rows": rows, "accepted": not reasons,
            "reasons": [describe(key, diff, margin) for key, diff, margin in reasons]}


def describe(key: str, diff: Mapping[str, float], margin: float | None) -> str:
    """Why one key fails the rule, with its interval."""
    name = "decaScore" if key == "decascore" else f"task {TASK_LABELS.get(key, key)} ({key})"
    interval = f"{diff['value']:+.2f} [95% {diff['low']:+.2f}, {diff['high']:+.2f}]"
    if margin is None:
        return f"{name}: candidate - holder = {interval}, lower bound not above 0"
    return f"{name}: candidate - holder = {interval}, lower bound below its non-inferiority margin -{margin:g}"


def refusal(found: Mapping) -> str:
    """One line: why the candidate was refused (every failing key, tasks first)."""
    reasons = sorted(found["reasons"], key=lambda r: r.startswith("decaScore"))
    return "; ".join(reasons)
