"""bench/faults as tests: every fast case is handled (one test each, run in this process), the tables, the
counts and the record, and the two slow cases that are tests nowhere else: a real full disk (a 1 MB tmpfs,
where this machine lets the test mount one) and `deca serve` answering one-sentence calls while long
contexts are decoded. The other slow cases are the slow tests they name (DVC, MLflow, Ray, Ctrl-C, SIGTERM)."""
from __future__ import annotations

import errno
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from bench import bad_inputs, faults
from bench.faults.cli import main
from bench.faults.case import slow_verdict
from bench.faults.tools import FIXTURES, processed, tiny_checkpoint
from tests.conftest import ROOT

CASES = faults.all_cases()
FAST = [c for c in CASES if not c.slow]

# Cases found not handled when the bench was written (reported with the command and its output). Strict:
# once the code handles one, its test fails here, and the entry goes.
KNOWN: dict[str, str] = {
}


def slug(name: str) -> str:
    return re.sub(r"[^\w.=-]+", "-", name).strip("-")[:70]


@pytest.mark.parametrize("case", FAST, ids=[slug(c.name) for c in FAST])
def test_every_fast_case_is_handled(case, request):
    if case.name in KNOWN:
        request.applymarker(pytest.mark.xfail(reason=KNOWN[case.name], strict=True))
    verdict = faults.run_case(case)
    assert verdict.handled, verdict.detail


def test_every_case_has_a_group_and_one_way_to_its_verdict():
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names) and len({slug(n) for n in names}) == len(names)
    assert [c.group for c in CASES] == sorted((c.group for c in CASES), key=faults.GROUPS.index)
    assert set(KNOWN) <= {c.name for c in FAST}
    assert {name for name, _ in bad_inputs.CASES} <= set(names)  # issue 12's cases are all here
    for case in CASES:
        assert (case.check is None) != (case.test is None), case.name
        if case.slow:
            path, func = case.test.split("::")
            assert f"def {func}(" in (ROOT / path).read_text(encoding="utf-8"), case.test


def fails(tmp):
    raise faults.NotHandled("accepted")


TRIO = [faults.Case("bad input", "good | one", "here", lambda tmp: "refused: x"),
        faults.Case("fault", "bad one", "here", fails),
        faults.Case("load", "slow one", "here", test="tests/x.py::test_y")]


def test_the_tables_group_the_verdicts_count_them_and_fail_on_one_not_handled(capsys):
    assert main(["--fast"], cases=TRIO) == 1
    out = capsys.readouterr().out
    assert "### bad input: 1 of 1 handled" in out and "### fault: 0 of 1 handled" in out
    assert "### load: 0 of 0 handled, 1 not run" in out
    assert re.search(r"\| good / one \| here \| handled \| refused: x \| \d+\.\d \|", out)
    assert "| bad one | here | **NOT HANDLED** | accepted |" in out
    assert "| slow one | here | not run (slow) | tests/x.py::test_y (not run: --fast) | - |" in out
    assert out.rstrip().endswith("1 of 2 cases handled (1 not handled); 1 slow cases not run")
    assert main(["--fast"], cases=TRIO[:1]) == 0


def test_the_record_holds_what_the_page_needs_and_renders_it(tmp_path, capsys):
    from experiments.results import records
    from experiments.results.reliability import values

    path = tmp_path / "reliability.json"
    assert main(["--fast", "--skip", "x", "--record", str(path)], cases=TRIO) == 1
    record = json.loads(path.read_text(encoding="utf-8"))
    assert record["command"] == f"python -m bench.faults --fast --skip x --record {path}"
    assert record["commit"] and record["date"] and record["minutes"] >= 0 and record["source"]
    assert len(record["load"]["before"]) == len(record["load"]["after"]) == 3
    assert records.check_record(record) == []
    assert [(c["name"], c["verdict"], c["kind"]) for c in record["cases"]] == [
        ("good | one", "handled", "fast"), ("bad one", "not handled", "fast"), ("slow one", "not run", "slow")]
    assert record["cases"][1]["evidence"] == "accepted" and record["cases"][2]["test"] == "tests/x.py::test_y"
    page = values(record)
    assert page["tally"] == "1 of 2 cases handled (1 not handled); 1 slow cases not run"
    assert "- **bad one** (here): accepted" in page["not_handled"]
    assert "slow one: tests/x.py::test_y (not run: --fast)" in page["not_run"]


def test_a_slow_verdict_is_its_test_passing_with_every_parameter():
    case = faults.Case("fault", "x", "here", test="tests/infra/test_processes.py::test_a")
    passed = [("tests.infra.test_processes", "test_a[1]", 3.0, "passed", ""),
              ("tests.infra.test_processes", "test_ab", 1.0, "failed", "boom")]
    assert slow_verdict(case, passed, 9).handled
    assert slow_verdict(case, [*passed, ("tests.infra.test_processes", "test_a[2]", 1, "xfailed", "known")],
                        9).handled is False
    skipped = slow_verdict(case, [("tests.infra.test_processes", "test_a", 0, "skipped", "needs root")], 9)
    assert skipped.handled is None and "skipped: needs root" in skipped.detail
    assert "not run" in slow_verdict(case, passed[1:], 9).detail


# ----------------------------------------------------------------------------- a real full disk

@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs mounted for the test (root only; skipped where mounting is not allowed)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a 1 MB tmpfs needs root")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(disk)], capture_output=True,
                          text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path, leave: int = 0) -> None:
    """Fill `disk` up to `leave` bytes from full."""
    size = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize - leave
    with open(disk / "fill", "wb") as f:
        try:
            f.write(b"\0" * max(size, 0))
            f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def requests_file(tmp: Path, n: int) -> Path:
    path = tmp / "requests.jsonl"
    path.write_text("".join(json.dumps({"context": f"w{i % 10} copy or good bad", "question": "w1 or w2 ?"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def deca(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "deca.cli", *argv], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def predict_args(tmp: Path, n: int) -> list[str]:
    return ["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--input", str(requests_file(tmp, n)),
            "--device", "cpu", "--no-progress"]


def score_args(tmp: Path) -> list[str]:
    preds = tmp / "sst.jsonl"
    preds.write_text("".join(json.dumps({"id": f"validation-{i}", "prediction": "positive"}) + "\n"
                             for i in range(4)), encoding="utf-8")
    return ["score", "--task", "sst", "--split", "validation", "--predictions", str(preds), "--data",
            str(processed(tmp)), "--no-progress"]


FULL_DISK = {  # name: (bytes left free, the command's arguments but the output, its output option)
    "predict fills the disk while writing": (300_000, lambda tmp: predict_args(tmp, 600), "--output"),
    "predict on a full disk": (0, lambda tmp: predict_args(tmp, 5), "--output"),
    "score on a full disk": (0, score_args, "--metrics-out"),
}


def assert_named_and_nothing_left(done: subprocess.CompletedProcess, target: Path, disk: Path) -> None:
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"error: {target}" in done.stderr and "No space left on device" in done.stderr, done.stderr[-3000:]
    assert sorted(p.name for p in disk.iterdir()) == ["fill"]  # no folder, no temporary file


@pytest.mark.slow
@pytest.mark.parametrize("how", list(FULL_DISK))
def test_a_real_full_disk_is_named_and_leaves_nothing(small_disk, tmp_path, how):
    leave, args, option = FULL_DISK[how]
    fill(small_disk, leave)
    target = small_disk / "new" / "out"
    assert_named_and_nothing_left(deca(*args(tmp_path), option, str(target), cwd=tmp_path), target, small_disk)


@pytest.mark.slow
def test_a_real_full_disk_during_prepare_is_named_and_leaves_nothing(small_disk, tmp_path):
    fill(small_disk)
    target = small_disk / "new" / "processed"
    done = deca("prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                "--out", str(target), cwd=tmp_path)
    assert_named_and_nothing_left(done, target, small_disk)


# ----------------------------------------------------------------------------- `deca serve` under load

@pytest.mark.slow
def test_small_calls_are_answered_while_long_contexts_are_decoded(tmp_path):
    """One-sentence calls sent one after another while a call of 64 contexts of the most characters allowed
    (20,000) is decoded: several are answered meanwhile, the median in seconds, not after the large call
    (bench/serve_fairness.py measures 64 such contexts, with and without the batch budget)."""
    from bench.serve import free_port, start, stop
    from bench.serve_fairness import large_call, scenario

    proc, url, _ = start(["--checkpoint", str(tiny_checkpoint(tmp_path)), "--port", str(free_port()),
                          "--device", "cpu"], timeout=120)
    try:
        took = scenario(url, large_call(64, 20_000 - 10), small=20, seconds=150, alone=False)
    finally:
        stop(proc)
    busy = took["busy"]  # the calls sent while the large one was in flight (the tiny model decodes it in seconds)
    assert took["large"] is not None and len(busy) >= 1, took
    assert statistics.median(busy) < min(10.0, took["large"] / 2), took
