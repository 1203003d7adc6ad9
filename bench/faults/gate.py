"""Issue 42, item 2: a promotion gate that needs evidence, and `deca compare --runs-a/--runs-b` that says what it
compared. The gate's cases call eval.gate.evidence, the function `deca register --version --alias` hands the
predictions to once the model store has checked which versions made them; the others run `deca` in this
process."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

import numpy as np

from bench.faults.case import Case, NotHandled, must
from bench.faults.tools import ROOT, error_line, refused, run_cli

ORIGIN = "issue 42: the promotion gate"
N = 400
BOUNDS = "must be between 200 (enough resamples for the ends of a 95% interval) and 1,048,576"


def predictions(folder: Path, tasks: tuple[str, ...]) -> Path:
    """A `deca evaluate` predictions directory: one record per example of each task, 75% of them right."""
    from bench.support import write_run

    correct = np.random.default_rng(0).random(N) < 0.75
    answers = ["positive" if i % 3 else "negative" for i in range(N)]
    for task in tasks:
        write_run(folder, task, correct, answers)
    return folder


def gate_on_zero_shot_tasks(tmp: Path) -> str:
    """Identical models evaluated only outside the decaScore: refused in one line, not accepted on +0.00."""
    from deca.errors import DecaError
    from eval.gate import evidence

    same = predictions(tmp / "same", ("snli", "amazon"))
    try:
        found = evidence([same], [same], {"default": 1.0}, replicates=200)
    except DecaError as exc:
        line = str(exc)
        must("no task the gate can judge" in line and "\n" not in line, f"refused, but with: {line}")
        return line
    raise NotHandled(f"{'accepted' if found['accepted'] else 'refused'} on a comparison of nothing: "
                     f"{found['reasons'] or 'no reason'}")


def gate_on_a_tie(tmp: Path) -> str:
    """Identical models on decaNLP tasks are refused by default, and promoted only under non_inferior."""
    from eval.gate import evidence, refusal

    same = predictions(tmp / "same", ("sst", "multinli.in.out"))
    found = evidence([same], [same], {"default": 1.0}, replicates=200)
    must(not found["accepted"], "a tie was accepted under the default rule")
    tied = evidence([same], [same], {"default": 1.0}, replicates=200, accept="non_inferior")
    must(tied["accepted"], "register.accept non_inferior refused a tie")
    return refusal(found)


def register_refuses(item: str, expect: str) -> Callable[[Path], str]:
    """`deca register --version 2 --alias champion --set ITEM` (gated, with predictions) is one line naming the
    key, before any model store is opened."""
    def check(tmp: Path) -> str:
        return refused(["register", "--name", "decanlp", "--version", "2", "--alias", "champion", "--set", item,
                        "--candidate-predictions", str(tmp / "c"), "--holder-predictions", str(tmp / "h")],
                       f"--set {item}: ", expect, once=True)
    return check


def validate_refuses(item: str, expect: str) -> Callable[[Path], str]:
    """`deca validate --set ITEM` (the pipeline's first stage) refuses a bad register value too."""
    def check(tmp: Path) -> str:
        return refused(["validate", "--params", str(ROOT / "params.yaml"), "--dvc-yaml", "none", "--set", item],
                       f"--set {item}: ", expect, once=True)
    return check


def compare_other_tasks(tmp: Path) -> str:
    """`deca compare --runs-a/--runs-b` of runs of other task sets names the tasks it dropped and calls the sum
    of the tasks it kept partial, with their count."""
    a = predictions(tmp / "a", ("sst", "multinli.in.out"))
    b = predictions(tmp / "b", ("sst", "snli"))
    code, out, err = run_cli(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200",
                              "--contamination", "none"])
    must(code == 0, f"exit {code}: {error_line(out + err)}")
    lines = out.splitlines()
    must(not any(line.startswith("decaScore") for line in lines), "the sum of SST alone is labelled decaScore")
    must(any(line.startswith("partial decaScore (1 of 10 tasks)") for line in lines), "no partial decaScore row")
    dropped = next((line for line in lines if line.startswith("not compared")), "")
    must("multinli.in.out" in dropped and "snli" in dropped, "the tasks compared on one side only are not named")
    return dropped


def compare_refuses_replicates(value: int) -> Callable[[Path], str]:
    """`deca compare --runs-a/--runs-b --replicates VALUE` is one line, within a second."""
    def check(tmp: Path) -> str:
        a = predictions(tmp / "a", ("sst",))
        start = time.perf_counter()
        line = refused(["compare", "--runs-a", str(a), "--runs-b", str(a), "--replicates", str(value),
                        "--contamination", "none"], f"--replicates {value}: {BOUNDS}")
        seconds = time.perf_counter() - start
        must(seconds < 1, f"refused, but after {seconds:.1f} s")
        return line
    return check


def cases() -> list[Case]:
    """The gate's and the paired comparison's cases of issue 42."""
    b, f = "bad input", "fault"
    return [
        Case(b, "gate: identical models on tasks outside the decaScore only", ORIGIN, gate_on_zero_shot_tasks),
        Case(f, "gate: identical models on decaNLP tasks (a tie)", ORIGIN, gate_on_a_tie),
        Case(b, "gate: deca register --set register.replicates=0", ORIGIN,
             register_refuses("register.replicates=0", f"register.replicates = 0: {BOUNDS}")),
        Case(b, "gate: deca register --set register.replicates=1", ORIGIN,
             register_refuses("register.replicates=1", f"register.replicates = 1: {BOUNDS}")),
        Case(b, "gate: deca register --set register.accept=non-inferior", ORIGIN,
             register_refuses("register.accept=non-inferior", "register.accept = 'non-inferior': must be one of")),
        Case(b, "gate: deca validate --set register.replicates=100000000", ORIGIN,
             validate_refuses("register.replicates=100000000", f"register.replicates = 100000000: {BOUNDS}")),
        Case(b, "gate: deca compare --runs-a/--runs-b of other task sets", ORIGIN, compare_other_tasks),
        Case(b, "gate: deca compare --runs-a/--runs-b --replicates 1", ORIGIN, compare_refuses_replicates(1)),
        Case(b, "gate: deca compare --runs-a/--runs-b --replicates 100000000", ORIGIN,
             compare_refuses_replicates(100_000_000)),
    ]
