"""The fault bench's record from a pytest run (issue 43: one harness). A test marked
`@pytest.mark.fault(GROUP, NAME, ORIGIN)` is a case of docs/results/reliability.md: GROUP is one of the page's
groups (experiments/results/reliability.GROUPS), NAME the case, ORIGIN where it was found. With
`--fault-record PATH` the run writes the page's record:

    python -m pytest tests -m fault --fault-record docs/results/records/reliability.json

A case's verdict is its test's outcome: handled when it passed (with every parameter, where the items of one
test share a case), not handled when one failed, errored or is a known failure (xfail), not run when it was
skipped or deselected. Its evidence is what the test gave `observed(...)`, else the failure's message, the
reason it was skipped, or "passed". The rows travel in each report's user_properties, so a run under
pytest-xdist writes the same record (its deselected cases aside: the workers deselect them).
"""
from __future__ import annotations

import json
import shlex
import subprocess
import time
from pathlib import Path

import pytest

KEY, SAID = "deca_fault", "deca_observed"
EVIDENCE = 300  # characters of evidence kept per case
RANK = {"handled": 0, "not run": 1, "not handled": 2}  # the worst outcome of a case's items is its verdict


def pytest_addoption(parser):
    parser.addoption("--fault-record", metavar="PATH", type=Path, default=None,
                     help="write the verdicts of the tests marked fault as the record of docs/results/reliability.md")


def pytest_configure(config):
    config.pluginmanager.register(Recorder(config), "deca-fault-record")


@pytest.fixture
def observed(request, tmp_path):
    """`observed(text)`: what a fault test saw that shows the case handled (its evidence in the record); the test's
    temporary folder is written TMP."""
    def say(text: str) -> None:
        request.node.user_properties.append((SAID, hide_tmp(str(text), tmp_paths(tmp_path))))
    return say


def tmp_paths(tmp: Path) -> list[str]:
    return sorted({str(tmp), str(tmp.resolve())}, key=len, reverse=True)


def hide_tmp(text: str, paths: list[str]) -> str:
    for path in paths:
        text = text.replace(path, "TMP")
    return " ".join(text.split())


def cases_of(item: pytest.Item) -> list[list[str]]:
    """The (group, name, origin) of each fault mark of `item`, checked: three strings, a group of the page."""
    from experiments.results.reliability import GROUPS

    found = [list(mark.args) for mark in item.iter_markers("fault")][::-1]  # in the order the marks are written
    for args in found:
        if len(args) != 3 or not all(isinstance(a, str) and a for a in args) or args[0] not in GROUPS:
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.fault{tuple(args)}: give (group, name, origin), "
                                    f"the group one of {', '.join(GROUPS)}")
    return found


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    cases = cases_of(item)
    if cases:
        tmp = item.funcargs.get("tmp_path") if hasattr(item, "funcargs") else None
        report.user_properties.append((KEY, {"cases": cases, "slow": item.get_closest_marker("slow") is not None,
                                             "tmp": tmp_paths(tmp) if tmp else []}))
    return report


def outcome(report) -> tuple[str, str]:
    """(verdict, evidence) of one phase's report."""
    if hasattr(report, "wasxfail"):
        return ("handled", "passed") if report.passed else ("not handled", f"known failure (xfail): {report.wasxfail}")
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        return "not run", f"skipped: {reason.removeprefix('Skipped: ')}"
    if report.failed:
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None)
        text = crash.splitlines()[0] if crash else str(report.longrepr).strip().splitlines()[-1]
        return "not handled", f"{report.when} failed: {text}"
    said = [text for key, text in report.user_properties if key == SAID]
    return "handled", "; ".join(said) or "passed"


class Recorder:
    """Collects the outcome of every fault test's phases (and the fault tests deselected); writes the record."""

    def __init__(self, config):
        from bench.record import load

        self.config, self.started, self.load_before = config, time.time(), load()
        self.items: dict[str, dict] = {}  # nodeid -> cases, kind, verdict, evidence, seconds
        self.order: dict[str, int] = {}  # nodeid -> its place in the collection (rows follow it)

    def item(self, nodeid: str, cases: list, slow: bool) -> dict:
        return self.items.setdefault(nodeid, {"cases": cases, "kind": "slow" if slow else "fast",
                                              "verdict": "handled", "evidence": "", "seconds": 0.0})

    def pytest_runtest_logreport(self, report):
        fault = next((value for key, value in report.user_properties if key == KEY), None)
        if fault is None:
            return
        row = self.item(report.nodeid, fault["cases"], fault["slow"])
        row["seconds"] += report.duration
        verdict, evidence = outcome(report)
        if report.when == "call" or verdict != "handled":
            if RANK[verdict] >= RANK[row["verdict"]]:
                row["verdict"], row["evidence"] = verdict, hide_tmp(evidence, fault["tmp"])

    def pytest_deselected(self, items):
        how = " ".join(f"{flag} {shlex.quote(value)}" for flag, value in (
            ("-m", self.config.option.markexpr), ("-k", self.config.option.keyword)) if value)
        for item in items:
            cases = cases_of(item)
            if cases:
                row = self.item(item.nodeid, cases, item.get_closest_marker("slow") is not None)
                row["verdict"], row["evidence"] = "not run", f"deselected ({how or 'not selected'})"

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items):
        """One case name, one test function (its parameters may share it): a name given twice is refused. Runs
        before -m and -k deselect, so the rows keep the order of the whole collection."""
        seen: dict[str, str] = {}
        for item in items:
            self.order.setdefault(item.nodeid, len(self.order))
            for _, name, _ in cases_of(item):
                base = item.nodeid.split("[")[0]
                if seen.setdefault(name, base) != base:
                    raise pytest.UsageError(f"fault case {name!r} is marked on {seen[name]} and {base}: name each "
                                            f"case once")

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node, ids):
        """Under pytest-xdist the rows follow a worker's collection (this process collects nothing)."""
        for nodeid in ids:
            self.order.setdefault(nodeid, len(self.order))

    def pytest_sessionfinish(self, session, exitstatus):
        path = self.config.getoption("fault_record")
        if path is None or hasattr(self.config, "workerinput"):
            return
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        say = reporter.write_line if reporter else print
        if exitstatus == pytest.ExitCode.INTERRUPTED or not self.items:
            say(f"fault record {path}: not written ({'interrupted' if self.items else 'no test marked fault ran'})")
            return
        from deca.io import atomic_write
        from experiments.results.reliability import tally

        data = self.record()
        text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
        atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
        say(f"fault record {path}: {tally(data['cases'])}")

    def record(self) -> dict:
        """The record of this run: command, commit, date, machine, load, minutes and a row per case."""
        from bench.record import commit, load, this_machine

        return {"source": "python -m pytest tests -m fault: every test marked fault, its outcome the case's verdict "
                          "(tests/faults/record.py)",
                "command": shlex.join(["python", "-m", "pytest", *self.config.invocation_params.args]),
                "commit": commit(), "dirty": dirty(),
                "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(self.started)), "machine": "this",
                "machines": {"this": this_machine()}, "load": {"before": self.load_before, "after": load()},
                "minutes": round((time.time() - self.started) / 60, 2),
                "cases": case_rows(dict(sorted(self.items.items(), key=lambda kv: self.order.get(kv[0], 1 << 30))))}


def case_rows(items: dict[str, dict]) -> list[dict]:
    """A row per case, in the order of `items`: the items of one case (its parameters, or a test
    marked with several cases) merged, the worst verdict theirs, their seconds summed."""
    rows: dict[str, dict] = {}
    for nodeid, item in items.items():
        for group, name, origin in item["cases"]:
            row = rows.setdefault(name, {"group": group, "name": name, "origin": origin, "kind": item["kind"],
                                         "tests": [], "verdict": "handled", "evidence": [], "seconds": 0.0})
            row["tests"].append(nodeid)
            row["seconds"] += item["seconds"]
            if RANK[item["verdict"]] > RANK[row["verdict"]]:
                row["verdict"], row["evidence"] = item["verdict"], []
            if item["verdict"] == row["verdict"] and item["evidence"] not in row["evidence"]:
                row["evidence"].append(item["evidence"])
    return [entry(row) for row in rows.values()]


def entry(row: dict) -> dict:
    """One case of the record (the schema experiments/results/reliability.py reads)."""
    tests = row["tests"]
    test = tests[0] if len(tests) == 1 else tests[0].split("[")[0]
    evidence = "; ".join(row["evidence"])
    if evidence == "passed":
        evidence = f"{test} passed" + (f" with each of its {len(tests)} parameters" if len(tests) > 1 else "")
    cut = evidence[:EVIDENCE] + ("..." if len(evidence) > EVIDENCE else "")
    return {"group": row["group"], "name": row["name"], "origin": row["origin"], "kind": row["kind"], "test": test,
            "verdict": row["verdict"], "evidence": cut, "seconds": round(row["seconds"], 2)}


def dirty() -> bool:
    """Whether tracked files differ from the commit (the commit then does not say all that ran)."""
    from bench.record import ROOT

    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                          text=True)
    return bool(done.stdout.strip())
