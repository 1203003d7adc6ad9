"""Issue 42, item 2: a promotion gate that needs evidence, and `deca compare --runs-a/--runs-b` that says what it
compared. The gate's cases call eval.gate.evidence, the function `deca register --version --alias` hands the
predictions to once the model store has checked which versions made them; the others run `deca` in this
process."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from tests.faults.tools import case, error_line, refused, run_cli, validate_refuses

ORIGIN = "issue 42: the promotion gate"
B = "bad input"
N = 400
BOUNDS = "must be between 200 (enough resamples for the ends of a 95% interval) and 1,048,576"


def predictions(folder: Path, tasks: tuple[str, ...]) -> Path:
    """A `deca evaluate` predictions directory: one record per example of each task, 75% of them right."""
    from tests.support import write_run

    correct = np.random.default_rng(0).random(N) < 0.75
    answers = ["positive" if i % 3 else "negative" for i in range(N)]
    for task in tasks:
        write_run(folder, task, correct, answers)
    return folder


@pytest.mark.fault(B, "gate: identical models on tasks outside the decaScore only", ORIGIN)
def test_the_gate_refuses_a_comparison_of_nothing(tmp_path, observed):
    """Identical models evaluated only outside the decaScore: refused in one line, not accepted on +0.00."""
    from deca.errors import DecaError
    from eval.gate import evidence

    same = predictions(tmp_path / "same", ("snli", "amazon"))
    with pytest.raises(DecaError) as refusal:
        found = evidence([same], [same], {"default": 1.0}, replicates=200)
        pytest.fail(f"{'accepted' if found['accepted'] else 'refused'} on a comparison of nothing: "
                    f"{found['reasons'] or 'no reason'}")
    line = str(refusal.value)
    assert "no task the gate can judge" in line and "\n" not in line, f"refused, but with: {line}"
    observed(line)


@pytest.mark.fault("fault", "gate: identical models on decaNLP tasks (a tie)", ORIGIN)
def test_the_gate_promotes_a_tie_only_when_told(tmp_path, observed):
    """Identical models on decaNLP tasks are refused by default, and promoted only under non_inferior."""
    from eval.gate import evidence, refusal

    same = predictions(tmp_path / "same", ("sst", "multinli.in.out"))
    found = evidence([same], [same], {"default": 1.0}, replicates=200)
    assert not found["accepted"], "a tie was accepted under the default rule"
    tied = evidence([same], [same], {"default": 1.0}, replicates=200, accept="non_inferior")
    assert tied["accepted"], "register.accept non_inferior refused a tie"
    observed(refusal(found))


@pytest.mark.parametrize("item, expect", [
    case(B, "gate: deca register --set register.replicates=0", ORIGIN, "register.replicates=0",
         f"register.replicates = 0: {BOUNDS}"),
    case(B, "gate: deca register --set register.replicates=1", ORIGIN, "register.replicates=1",
         f"register.replicates = 1: {BOUNDS}"),
    case(B, "gate: deca register --set register.accept=non-inferior", ORIGIN, "register.accept=non-inferior",
         "register.accept = 'non-inferior': must be one of"),
])
def test_deca_register_refuses_a_set(tmp_path, observed, item, expect):
    """`deca register --version 2 --alias champion --set ITEM` (gated, with predictions) is one line naming the
    key, before any model store is opened."""
    observed(refused(["register", "--name", "decanlp", "--version", "2", "--alias", "champion", "--set", item,
                      "--candidate-predictions", str(tmp_path / "c"), "--holder-predictions", str(tmp_path / "h")],
                     f"--set {item}: ", expect, once=True))


@pytest.mark.fault(B, "gate: deca validate --set register.replicates=100000000", ORIGIN)
def test_deca_validate_refuses_a_register_value(observed):
    """`deca validate --set ITEM` (the pipeline's first stage) refuses a bad register value too."""
    observed(validate_refuses("register.replicates=100000000", f"register.replicates = 100000000: {BOUNDS}"))


@pytest.mark.fault(B, "gate: deca compare --runs-a/--runs-b of other task sets", ORIGIN)
def test_compare_names_the_tasks_it_dropped(tmp_path, observed):
    """`deca compare --runs-a/--runs-b` of runs of other task sets names the tasks it dropped and calls the sum
    of the tasks it kept partial, with their count."""
    a = predictions(tmp_path / "a", ("sst", "multinli.in.out"))
    b = predictions(tmp_path / "b", ("sst", "snli"))
    code, out, err = run_cli(["compare", "--runs-a", str(a), "--runs-b", str(b), "--replicates", "200",
                              "--contamination", "none"])
    assert code == 0, f"exit {code}: {error_line(out + err)}"
    lines = out.splitlines()
    assert not any(line.startswith("decaScore") for line in lines), "the sum of SST alone is labelled decaScore"
    assert any(line.startswith("partial decaScore (1 of 10 tasks)") for line in lines), "no partial decaScore row"
    dropped = next((line for line in lines if line.startswith("not compared")), "")
    assert "multinli.in.out" in dropped and "snli" in dropped, "the tasks compared on one side only are not named"
    observed(dropped)


@pytest.mark.parametrize("value", [
    case(B, "gate: deca compare --runs-a/--runs-b --replicates 1", ORIGIN, 1),
    case(B, "gate: deca compare --runs-a/--runs-b --replicates 100000000", ORIGIN, 100_000_000),
])
def test_compare_refuses_replicates_in_a_second(tmp_path, observed, value):
    a = predictions(tmp_path / "a", ("sst",))
    start = time.perf_counter()
    line = refused(["compare", "--runs-a", str(a), "--runs-b", str(a), "--replicates", str(value),
                    "--contamination", "none"], f"--replicates {value}: {BOUNDS}")
    seconds = time.perf_counter() - start
    assert seconds < 1, f"refused, but after {seconds:.1f} s"
    observed(line)
