"""Paired comparison of two runs (or two groups of seed runs) on the same examples: `deca compare --runs-a
DIR... --runs-b DIR...`.

Each DIR is a predictions directory written by `deca evaluate` (evaluate.predictions_dir): one
``<task>.jsonl`` per task whose records carry the example's statistics (``stats``, eval.examples). Per task
both sides have, and for the decaScore: b minus a with its paired-bootstrap 95% interval and p-value
(eval.stats), McNemar's p-value for exact-match tasks with one run a side, each side's interval, the
task's floor computed from the records' contexts, questions and gold answers (eval.verdict.baseline; none
for WOZ and WikiSQL, whose metrics read a gold the records do not keep), and the verdict
(eval.verdict) against the expected direction. Given the output of `deca contamination`, also b minus a
on the clean subset: without the evaluation examples it flags as overlapping training data. The tasks not in
every run of both sides are named (``dropped``), and a sum over fewer than the ten decaNLP tasks is called a
partial decaScore with its task count (`decascore_name`).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

import numpy as np

from deca.contamination import split_key
from deca.custom_tasks import NEEDS_GOLD
from deca.errors import DataError
from deca.io import json_line
from deca.registry import DECANLP, all_tasks
from eval.examples import kind_of
from eval.labels import TASK_LABELS
from eval.stats import Difference, Sample, compare
from eval.verdict import at_floor, baseline, below_floor, verdict

FIX = "re-run `deca evaluate` for this run (it writes each example's statistics into <task>.jsonl)"


@dataclass(frozen=True)
class Examples:
    """One task of one run: ids in file order, statistics (examples x columns), gold answers, questions and
    contexts."""

    ids: list[str]
    values: np.ndarray
    answers: list[str]
    questions: list[str]
    contexts: list[str]

    def floor(self, task: str) -> float | None:
        """The task's floor on these examples (eval.verdict.baseline), None where its metric reads a gold
        beyond the answers (WOZ's state, WikiSQL's query), which prediction records do not keep."""
        if all_tasks()[task].metric in NEEDS_GOLD:
            return None
        rows = [{"id": i, "context": c, "question": q, "answer": a, "answers": [a]}
                for i, c, q, a in zip(self.ids, self.contexts, self.questions, self.answers)]
        return baseline(task, rows)


def read_task(path: Path) -> Examples:
    """The records of one ``<task>.jsonl``; a DataError naming the line when one lacks ``stats``."""
    ids, values, answers, questions, contexts = [], [], [], [], []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, start=1):
            if not line.strip():
                continue
            record = json_line(line, path, lineno, FIX)
            if not isinstance(record, dict) or "id" not in record or not isinstance(record.get("stats"), list):
                raise DataError(path, "no per-example statistics ('stats') in the record", line=lineno, fix=FIX)
            ids.append(str(record["id"]))
            values.append([float(x) for x in record["stats"]])
            answers.append(str(record.get("answer", "")))
            questions.append(str(record.get("question", "")))
            contexts.append(str(record.get("context", "")))
    if not ids:
        raise DataError(path, "no records", fix=FIX)
    return Examples(ids, np.asarray(values, dtype=float), answers, questions, contexts)


def read_run(directory: str | Path) -> dict[str, Examples]:
    """{task: its examples} of the ``<task>.jsonl`` files of a predictions directory (registered tasks)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise DataError(directory, "predictions directory not found",
                        fix="give the evaluate.predictions_dir of a run that `deca evaluate` scored")
    found = {task: read_task(directory / f"{task}.jsonl") for task in sorted(tasks_of(directory))}
    if not found:
        raise DataError(directory, "no <task>.jsonl of a registered task in it", fix=FIX)
    return found


def tasks_of(directory: str | Path) -> set[str]:
    """The registered tasks a predictions directory has a ``<task>.jsonl`` of (the files are not read)."""
    tasks = all_tasks()
    return {p.stem for p in Path(directory).glob("*.jsonl") if p.stem in tasks}


def dropped(a_dirs: Sequence[str | Path], b_dirs: Sequence[str | Path], compared: Sequence[str]
            ) -> dict[str, list[str]]:
    """{task: the sides ("a", "b") with a run that lacks it} for each task a run has that is not `compared`."""
    has = {side: [tasks_of(d) for d in dirs] for side, dirs in (("a", a_dirs), ("b", b_dirs))}
    seen = set().union(*has["a"], *has["b"]) - set(compared)
    return {t: [side for side, runs in has.items() if any(t not in r for r in runs)] for t in sorted(seen)}


def group(directories: Sequence[str | Path], orders: Mapping[str, Sequence[str]] | None = None
          ) -> tuple[dict[str, Sample], dict[str, Examples]]:
    """({task: Sample over the runs}, {task: the first run's examples}) for the tasks every run has (and
    `orders` names); examples are aligned by id to `orders[task]` (default: the first run's order) and every
    run must have exactly those examples."""
    runs = [read_run(d) for d in directories]
    tasks = [t for t in runs[0] if all(t in r for r in runs) and (orders is None or t in orders)]
    samples = {}
    for task in tasks:
        order = list(orders[task]) if orders is not None else runs[0][task].ids
        for directory, run in zip(directories, runs):
            if sorted(run[task].ids) != sorted(order):
                raise DataError(Path(directory) / f"{task}.jsonl", "other examples than the runs it is compared with",
                                fix="compare runs evaluated on the same split and evaluate.max_examples")
        matrices = [_aligned(run[task], order) for run in runs]
        samples[task] = Sample.of(kind_of(all_tasks()[task].metric), *matrices)
    return samples, {t: runs[0][t] for t in tasks}


def _aligned(examples: Examples, order: Sequence[str]) -> np.ndarray:
    position = {i: k for k, i in enumerate(examples.ids)}
    return examples.values[[position[i] for i in order]]


def paired(a_dirs: Sequence[str | Path], b_dirs: Sequence[str | Path], expect: str = "higher",
           replicates: int = 1000, seed: int = 0, flagged: Mapping[str, set[str]] | None = None,
           split: str = "validation", source: str | Path | None = None) -> dict:
    """The comparison as a JSON-ready dict: per task and for the decaScore, b - a with interval, p-values,
    each side's interval, the baseline and the verdict (expected direction of b - a: `expect`). With
    `flagged` (deca.contamination.load_flagged of the folder `source`; the runs scored `split`), also
    ``clean``: the same difference on the examples it does not flag (`clean_rows`)."""
    a, examples = group(a_dirs)
    b, _ = group(b_dirs, orders={t: e.ids for t, e in examples.items()})
    shared = [t for t in a if t in b]
    if not shared:
        raise DataError(Path(b_dirs[0]), f"no task in common with {a_dirs[0]}", fix="compare runs of the same tasks")
    found = compare({t: a[t] for t in shared}, {t: b[t] for t in shared}, replicates=replicates, seed=seed)
    sign = 1.0 if expect == "higher" else -1.0
    rows = {}
    for key, diff in found.items():
        floor = examples[key].floor(key) if key in examples else None
        rows[key] = _row(diff, floor, sign)
    summed = [t for t in shared if t in DECANLP]
    result = {"a": [str(d) for d in a_dirs], "b": [str(d) for d in b_dirs], "expect": expect,
              "replicates": replicates, "seed": seed, "rows": rows, "dropped": dropped(a_dirs, b_dirs, shared),
              "decascore": {"tasks": summed, "partial": len(summed) < len(DECANLP)} if summed else None}
    if flagged is not None:
        result["clean"] = {"source": str(source), "split": split,
                           **clean_rows({t: a[t] for t in shared}, {t: b[t] for t in shared}, examples, flagged,
                                        split, replicates, seed)}
    return result


def clean_rows(a: Mapping[str, Sample], b: Mapping[str, Sample], examples: Mapping[str, Examples],
               flagged: Mapping[str, set[str]], split: str, replicates: int, seed: int) -> dict:
    """{"rows": {task or decascore: {"a", "b", "diff", "p", "n", "excluded"}}, "not_checked": [tasks]}: b - a
    without the examples `flagged` names for ``<task>/<split>`` (tasks whose split the contamination output
    does not cover are not checked; a task with every example flagged has n 0 and no difference, and is
    left out of the clean decaScore)."""
    keep_a, keep_b, counts, not_checked = {}, {}, {}, []
    for task in a:
        ids = flagged.get(split_key(task, split))
        if ids is None:
            not_checked.append(task)
            continue
        mask = np.array([i not in ids for i in examples[task].ids], dtype=bool)
        counts[task] = {"n": int(mask.sum()), "excluded": int((~mask).sum())}
        if mask.any():
            keep_a[task] = Sample(a[task].kind, a[task].values[:, mask])
            keep_b[task] = Sample(b[task].kind, b[task].values[:, mask])
    rows = {t: {"a": None, "b": None, "diff": None, "p": None, **c} for t, c in counts.items()}
    if keep_a:
        for key, diff in compare(keep_a, keep_b, replicates=replicates, seed=seed).items():
            summed = [t for t in keep_a if t in DECANLP]
            c = counts.get(key) or {"n": sum(counts[t]["n"] for t in summed),
                                    "excluded": sum(counts[t]["excluded"] for t in summed)}
            rows[key] = {"a": diff.a.to_json(), "b": diff.b.to_json(), "diff": diff.diff.to_json(), "p": diff.p, **c}
    return {"rows": rows, "not_checked": not_checked}


def _row(diff: Difference, floor: float | None, sign: float) -> dict:
    floors = [at_floor(diff.a, floor), at_floor(diff.b, floor)]
    below = [below_floor(diff.a, floor), below_floor(diff.b, floor)]
    return {"a": diff.a.to_json(), "b": diff.b.to_json(), "diff": diff.diff.to_json(), "p": diff.p,
            "mcnemar": diff.mcnemar, "baseline": floor, "verdict": verdict(diff.diff, sign, floors=floors, below=below)}


def text(result: Mapping) -> str:
    """The comparison as an aligned table for a terminal (with ``clean``: b - a on the clean subset and the
    examples flagged, per task and for the decaScore)."""
    clean = result.get("clean")
    head = ["task", "a [95%]", "b [95%]", "b - a [95%]", "p", "McNemar p", "baseline", "verdict"]
    if clean:
        head += ["clean b - a [95%]", "clean p", "flagged"]
    body = []
    for key, r in result["rows"].items():
        name = decascore_name(result["decascore"]) if key == "decascore" else TASK_LABELS.get(key, key)
        cells = [name, _show(r["a"]), _show(r["b"]), _show(r["diff"], signed=True), f"{r['p']:.3g}",
                 "-" if r["mcnemar"] is None else f"{r['mcnemar']:.3g}",
                 "-" if r["baseline"] is None else f"{r['baseline']:.1f}", r["verdict"]]
        if clean:
            c = clean["rows"].get(key)
            cells += (["-", "-", "not checked"] if c is None else
                      ["-" if c["diff"] is None else _show(c["diff"], signed=True),
                       "-" if c["p"] is None else f"{c['p']:.3g}", f"{c['excluded']:,} of {c['n'] + c['excluded']:,}"])
        body.append(cells)
    widths = [max(len(c) for c in col) for col in zip(head, *body)]
    fmt = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    runs = f"{len(result['a'])} run(s) vs {len(result['b'])} run(s)"
    title = (f"b - a: {runs}, paired bootstrap of {result['replicates']} resamples (seed {result['seed']}); "
             f"expected: b {result['expect']} than a")
    legend = ["verdict: reproduced / opposite = the 95% interval of b - a excludes 0 on the expected / other side; "
              "inconclusive = it covers 0; not tested = a side's interval reaches its task's floor (baseline: the strongest "
              "trivial answerer, eval/floors.py); fails = a side's interval lies wholly under it"]
    if clean:
        legend.append(f"clean: without the {clean['split']} examples `deca contamination` flags ({clean['source']})")
    return "\n".join([title, fmt(head), fmt(["-" * w for w in widths]), *map(fmt, body), *legend, *notes(result)])


def decascore_name(decascore: Mapping | None) -> str:
    """"decaScore" for the sum over the ten decaNLP tasks, else "partial decaScore (k of 10 tasks)"."""
    if decascore and decascore["partial"]:
        return f"partial decaScore ({len(decascore['tasks'])} of {len(DECANLP)} tasks)"
    return "decaScore"


def notes(result: Mapping) -> list[str]:
    """The lines under the table: which tasks a partial decaScore sums, and the tasks not compared."""
    out = []
    score = result.get("decascore")
    if score and score["partial"]:
        out.append(f"{decascore_name(score)}: the sum over {', '.join(score['tasks'])} only, not a decaScore")
    missing = [f"{TASK_LABELS.get(t, t)} ({t}: missing from a run of {' and '.join(sides)})"
               for t, sides in result.get("dropped", {}).items()]
    if missing:
        out.append(f"not compared, not in every run of both sides: {'; '.join(missing)}")
    return out


def _show(i: Mapping, signed: bool = False) -> str:
    value = f"{i['value']:+.1f}" if signed else f"{i['value']:.1f}"
    return f"{value} [{i['low']:.1f}, {i['high']:.1f}]"

