"""The chance/majority baselines behind the results pages, computed once from the prepared validation data
(eval/verdict.py's `baseline`) and kept as a record, so that `make results` needs no data.

    python -m experiments.results.baselines DIR [DIR ...] --tasks sst schema sst.happy_angry \
        --out docs/results/records/baselines.json

Each DIR is a `deca prepare --out` folder; a task is read from the first DIR that holds it.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from deca.schema import read_split
from eval.verdict import MAX_LABELS, baseline, majority, random_candidate


def task_baseline(processed: Path, task: str, split: str = "validation") -> dict:
    """{"baseline", "kind", "examples", "split"} of one task from its prepared `split`."""
    rows = read_split(processed, task, split, columns=["answer", "question"]).to_pylist()
    answers, questions = [r["answer"] for r in rows], [r["question"] for r in rows]
    value = baseline(task, answers, questions)
    kind = "random candidate" if value is not None and random_candidate(answers, questions) == value else "majority"
    labels = len({a.strip().lower() for a in answers}) <= MAX_LABELS
    return {"baseline": None if value is None else round(value, 2), "kind": kind if value is not None else None,
            "majority": round(majority(answers), 2) if labels else None, "examples": len(rows), "split": split}


def main(argv: list[str] | None = None) -> int:
    """Write the baselines of --tasks (found in the DIRs) to --out."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("processed", nargs="+", type=Path, help="deca prepare --out folders")
    ap.add_argument("--tasks", nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    found = {}
    for task in args.tasks:
        folder = next((p for p in args.processed if (p / task / "validation").is_dir()), None)
        if folder is None:
            ap.error(f"no prepared validation split of {task} in {', '.join(map(str, args.processed))}")
        found[task] = task_baseline(folder, task)
    record = {"what": "chance/majority baselines (eval/verdict.py) of the validation splits",
              "command": "python -m experiments.results.baselines " + " ".join(argv if argv is not None else sys.argv[1:]),
              "tasks": found}
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(found, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
