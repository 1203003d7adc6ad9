"""The serving page's section on how far an answer depends on the other rows of its model batch, from
docs/results/records/batch_invariance.json (`python -m bench.batch_invariance --record`): per setting
(thread count, batch size) how many answers changed and the largest difference of a token's probability
and source weights from the same row decoded alone on one thread."""
from __future__ import annotations

from collections import Counter

from experiments.results import records
from experiments.results.render import table

RECORD = "batch_invariance"


def batches(case: dict) -> list[int]:
    """The sizes of the batches a setting decoded: the record's where it holds them, else as
    bench/batch_invariance.py's grouped() cuts the rows (shuffled, then in order: full batches and the rest)."""
    if case.get("batches"):
        return case["batches"]
    n, size = len(case["rows"]), case["batch_size"]
    return [size] * (n // size) + ([n % size] if n % size else [])


def formed(case: dict) -> str:
    """'2 x 16, 1 x 1': how many batches of each size the setting decoded."""
    found = Counter(batches(case))
    return ", ".join(f"{k} x {size}" for size, k in sorted(found.items(), reverse=True))


def size_cell(case: dict) -> str:
    """The batch size asked for, with the largest batch formed where the rows could not fill it."""
    largest = max(batches(case))
    if largest >= case["batch_size"]:
        return str(case["batch_size"])
    return f"{case['batch_size']} (largest batch formed: {largest})"


def setting_row(case: dict) -> tuple:
    rows = case["rows"]
    changed = sum(not r["same_answer"] for r in rows)
    return (case["threads"], size_cell(case), formed(case), len(rows), changed,
            f"{max(r['probability'] for r in rows):.1e}", f"{max(r['weights'] for r in rows):.1e}")


def largest(record: dict, key: str) -> float:
    return max(r[key] for case in record["cases"] for r in case["rows"])


def section(record: dict | None = None) -> str:
    """The section's text: where it comes from, the table, and what it means for a reader of the JSON."""
    record = record or records.load(RECORD)
    s = record["settings"]
    changed = sum(not r["same_answer"] for case in record["cases"] for r in case["rows"])
    n = len(record["cases"][0]["rows"])
    per_task = Counter(r["task"] for r in record["cases"][0]["rows"])
    answers = ("no answer (text or tokens) changed" if not changed
               else f"{changed} answers (of {n} rows x {len(record['cases'])} settings) changed")
    return (f"`{record['command']}` ({record['date']}, commit `{record['commit']}`, "
            f"{records.describe_machine(record['machine'])}, load {record['load_before'][0]:.1f}, torch {s['torch']}, model "
            f"`{s['checkpoint']}` (sha256 `{s['sha256'][:16]}`) at iteration {s['iteration']}; record "
            f"[records/{RECORD}.json](records/{RECORD}.json), every row's differences) decodes up to "
            f"{s['rows_per_task']} validation rows of each task ({n} in all: "
            + ", ".join(f"{task} {k}" for task, k in per_task.items())
            + f") alone on one thread, then in random batches (seed {s['seed']}) of each size with each thread "
              "count:\n\n"
            + table(("threads", "batch size", "batches (count x rows)", "rows", "answers changed",
                     "largest probability difference",
                     "largest weight difference"), [setting_row(c) for c in record["cases"]])
            + f"\n\nOver every setting {answers}; a token's probability moved by at most "
              f"{largest(record, 'probability'):.1e} and a source weight by at most {largest(record, 'weights'):.1e}. "
              "`deca predict` and `deca serve` round both to 6 digits, so the last digit of a number can differ "
              "between a row asked alone and the same row asked beside others (or on another CPU); the tests "
              "compare answers and tokens exactly and these numbers within a stated tolerance (tests/infer/answers.py).")
