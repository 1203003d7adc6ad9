"""The promotion gate: is a candidate model really better than the one an alias points at?

Both were evaluated by `deca evaluate` on the same examples (their predictions directories, with each
example's statistics); `evidence` compares them with the project's paired bootstrap (eval.paired: candidate
minus holder, per task and for the decaScore, 95% intervals) and applies the rule params register.accept names
(RULES; ``superior`` unless params ask for ``non_inferior`` by name):

- superior: the 95% lower bound of the decaScore difference is above 0 (the gain is not noise: a tie never
  promotes), and no task's lower bound falls below minus its non-inferiority margin (params register.margins,
  in points of the task's headline; ``default`` for the tasks not named): a gain elsewhere does not buy a
  clear loss. It judges the decaScore, so both sides need a decaNLP task (zero-shot or custom tasks alone
  are refused, `judged`);
- non_inferior: no task's lower bound falls below minus its margin (a tie promotes).

Both sides must cover the same tasks. `refusal` is the one line that says why a candidate was refused;
`check_config` checks params register (deca.checks runs it for `deca register` and `deca validate`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from deca.errors import ConfigError, DataError, did_you_mean
from deca.registry import DECANLP, all_tasks
from eval.labels import TASK_LABELS
from eval.paired import paired, read_run
from eval.stats import check_replicates

# register.accept: what a candidate must show, by name; the first is the default (deca.config RegisterConfig)
RULES = {
    "superior": "promote only if the paired 95% lower bound of decaScore(candidate) - decaScore(holder) is above 0 "
                "and no task's lower bound is below minus its non-inferiority margin",
    "non_inferior": "promote if no task's paired 95% lower bound of candidate - holder is below minus its "
                    "non-inferiority margin (register.accept non_inferior: a tie promotes)",
}
ACCEPT = tuple(RULES)
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


def check_accept(accept: str) -> None:
    """ConfigError naming register.accept unless it is one of ACCEPT."""
    if accept not in ACCEPT:
        raise ConfigError(f"register.accept = {accept!r}: must be one of {', '.join(ACCEPT)}"
                          + did_you_mean(accept, ACCEPT))


def check_config(config) -> None:
    """The checks of params register (a deca.config RegisterConfig): accept, replicates, margins."""
    check_accept(config.accept)
    check_replicates(config.replicates, "register.replicates")
    check_margins(config.margins)


def same_tasks(candidate: Sequence[str | Path], holder: Sequence[str | Path]) -> list[str]:
    """The tasks both sides were evaluated on; a DataError naming the predictions directory whose tasks differ
    from the other side's."""
    a, b = set(read_run(holder[0])), set(read_run(candidate[0]))
    if a != b:
        only = sorted(a ^ b)
        where = candidate[0] if b - a or not a - b else holder[0]
        raise DataError(Path(where), f"the candidate and the holder were evaluated on other tasks ({', '.join(only)} "
                        "on one side only)", fix="evaluate both on the same tasks and split")
    return sorted(a)


def judged(candidate: Sequence[str | Path], tasks: Sequence[str], accept: str) -> None:
    """One-line DataError when the rule `accept` can judge none of `tasks`: superior judges the decaScore, which
    only the decaNLP tasks make up."""
    if accept == "superior" and not any(t in DECANLP for t in tasks):
        raise DataError(Path(candidate[0]), f"no task the gate can judge: both sides were evaluated only on "
                        f"{', '.join(tasks)}, outside the decaScore, and register.accept superior promotes on a "
                        "decaScore gain (evaluate both on decaNLP tasks, or set register.accept: non_inferior)")


def evidence(candidate: Sequence[str | Path], holder: Sequence[str | Path], margins: Mapping[str, float],
             replicates: int = 1000, seed: int = 0, accept: str = ACCEPT[0]) -> dict:
    """The comparison and the decision under rule `accept` as a JSON-ready dict: rule, per key (tasks,
    'decascore') the difference candidate - holder with its interval, each task's margin, `accepted` and
    `reasons`."""
    check_accept(accept)
    check_replicates(replicates, "register.replicates")
    check_margins(margins)
    judged(candidate, same_tasks(candidate, holder), accept)
    found = paired(holder, candidate, replicates=replicates, seed=seed)
    judged(candidate, [key for key in found["rows"] if key != "decascore"], accept)  # the tasks every run has
    rows = {key: {"diff": row["diff"], "candidate": row["b"], "holder": row["a"],
                  **({} if key == "decascore" else {"margin": margin_of(key, margins)})}
            for key, row in found["rows"].items()}
    reasons = []
    score = rows.get("decascore")
    if accept == "superior" and not score["diff"]["low"] > 0:
        reasons.append(("decascore", score["diff"], None))
    for key, row in rows.items():
        if key != "decascore" and row["diff"]["low"] < -row["margin"]:
            reasons.append((key, row["diff"], row["margin"]))
    return {"rule": RULES[accept], "accept": accept, "candidate": [str(d) for d in candidate],
            "holder": [str(d) for d in holder], "replicates": replicates, "seed": seed, "rows": rows,
            "accepted": not reasons, "reasons": [describe(key, diff, margin) for key, diff, margin in reasons]}


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
