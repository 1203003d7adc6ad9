"""What a case of the fault bench is, what its verdict is, and how it is reached.

A case is handled when the project does what it should: for a bad input, the command fails with one clear
line (exit code not 0, no traceback, a message naming the file, line, option or key and the fix); for a
fault, nothing is lost or left behind and the failure is named; for load, the work of one request is
bounded and a small request is not starved by a large one. A fast case (`check`) runs in this process in a
temporary folder; a slow case (`test`: a SIGKILL, a real full disk, a server under load, a DVC experiment)
is a pytest node, and its verdict is read from the JUnit report of one pytest run for all of them: handled
when its test passed with every parameter; not handled when one failed, errored or is a known failure
(xfail); not run when it was skipped (the reason is kept) or left out (--fast, --skip).
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]
GROUPS = ("bad input", "fault", "load")
HANDLED, NOT_HANDLED, NOT_RUN = "handled", "not handled", "not run"


class NotHandled(Exception):
    """A case that was not handled; the message says what happened instead."""


@dataclass(frozen=True)
class Case:
    """One case: its group, name and where it was found; `check` (fast) or `test` (slow) gives its verdict."""

    group: str
    name: str
    origin: str
    check: Callable[[Path], str] | None = None  # returns what showed it handled; raises NotHandled
    test: str | None = None  # a slow case: the pytest node that checks it

    @property
    def slow(self) -> bool:
        """Whether the verdict comes from a slow test."""
        return self.check is None


@dataclass(frozen=True)
class Verdict:
    """What running a case gave: handled (True), not handled (False) or not run (None), and the evidence."""

    case: Case
    handled: bool | None
    detail: str
    seconds: float = 0.0

    @property
    def word(self) -> str:
        """handled, not handled or not run."""
        return {True: HANDLED, False: NOT_HANDLED, None: NOT_RUN}[self.handled]


def must(condition: bool, why: str) -> None:
    """Raise NotHandled(why) unless `condition`."""
    if not condition:
        raise NotHandled(why)


@contextlib.contextmanager
def patched(owner: object, attr: str, value: object) -> Iterator[None]:
    """`owner.attr` is `value` inside the block."""
    old = getattr(owner, attr)
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, old)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """These environment variables set inside the block."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def run_case(case: Case) -> Verdict:
    """The verdict of a fast case, run in a temporary folder that is also the working directory."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="deca-fault-") as tmp, contextlib.chdir(tmp):
        try:
            detail, handled = case.check(Path(tmp)), True
        except NotHandled as exc:
            detail, handled = str(exc), False
        except Exception as exc:  # noqa: BLE001 - a crash of the code under test is a verdict too
            detail, handled = f"{type(exc).__name__} escaped: {exc}", False
        for path in {str(Path(tmp).resolve()), tmp}:
            detail = detail.replace(path, "TMP")
    return Verdict(case, handled, " ".join(str(detail).split()), time.perf_counter() - start)


Outcome = tuple[str, str, float, str, str]  # classname, name, seconds, outcome, message


def run_slow(cases: list[Case]) -> list[Verdict]:
    """The verdicts of slow cases: one pytest run of their tests."""
    nodes = sorted({c.test for c in cases})
    with tempfile.TemporaryDirectory(prefix="deca-fault-") as tmp:
        report = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        print(f"running {len(nodes)} slow tests ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *nodes], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took = time.perf_counter() - start
        results = ET.parse(report).getroot().iter("testcase") if report.exists() else []
        outcomes = [(tc.get("classname", ""), tc.get("name", ""), float(tc.get("time") or 0), *outcome(tc))
                    for tc in results]
    return [slow_verdict(c, outcomes, took) for c in cases]


def outcome(testcase: ET.Element) -> tuple[str, str]:
    """(passed, failed, error, skipped or xfailed, its message) of a JUnit test; xfailed: expected to fail, a
    known case not handled."""
    for child in testcase:
        if child.tag == "skipped":
            kind = "xfailed" if "xfail" in (child.get("type") or "") else "skipped"
            return kind, child.get("message") or ""
        if child.tag in ("failure", "error"):
            return ("failed" if child.tag == "failure" else "error"), child.get("message") or ""
    return "passed", ""


def slow_verdict(case: Case, outcomes: list[Outcome], took: float) -> Verdict:
    """The verdict of one slow case from the outcomes of the pytest run."""
    path, func = case.test.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    mine = [(n, s, o, m) for cls, n, s, o, m in outcomes if cls == module and (n == func or n.startswith(func + "["))]
    if not mine:
        return Verdict(case, False, f"{case.test}: not run (no such test?)", took)
    seconds = sum(s for _, s, _, _ in mine)
    bad = [f"{n} {o}" + (f" ({m.splitlines()[0][:120]})" if m else "") for n, _, o, m in mine
           if o not in ("passed", "skipped")]
    if bad:
        return Verdict(case, False, f"{case.test} not passed: {'; '.join(bad)}", seconds)
    skipped = [m for _, _, o, m in mine if o == "skipped"]
    if skipped:
        return Verdict(case, None, f"{case.test} skipped: {skipped[0]}", seconds)
    return Verdict(case, True, f"{case.test} passed ({seconds:.0f} s)", seconds)
