"""tests/faults/record.py, the fault bench's record from a pytest run: a sample test file run by pytest with the
plugin alone, each kind of outcome in it (passed with its evidence, failed, skipped, a known failure, one
parameter of a case failing, deselected), and the record read back as the results page reads it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.results import records
from experiments.results.reliability import values
from tests.conftest import ROOT

SAMPLE = '''
import pytest

@pytest.mark.fault("bad input", "refused | in one line", "here")
def test_refused(tmp_path, observed):
    observed(f"error: {tmp_path}/x.json:2: not JSON")

@pytest.mark.fault("fault", "left something", "here")
def test_left(tmp_path):
    assert not tmp_path.exists(), "the folder was left"

@pytest.mark.fault("fault", "needs root", "here")
def test_skipped():
    pytest.skip("mounting a tmpfs needs root")

@pytest.mark.fault("fault", "known", "here")
@pytest.mark.xfail(strict=True, reason="DVC's own")
def test_known():
    assert False

@pytest.mark.fault("load", "bounded", "there")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_bounded(n):
    assert n != 2, f"{n} waited"

@pytest.mark.fault("load", "left out", "there")
def test_left_out():
    pass

def test_not_a_case():
    pass
'''


def run(tmp_path: Path, text: str, *args: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_sample.py").write_text(text, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DECA_TEST_NO_SESSION_GUARD": "1"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.faults.record",
                           "--rootdir", str(tmp_path), *args, "test_sample.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def test_the_record_has_a_verdict_per_case_and_the_page_reads_it(tmp_path):
    done = run(tmp_path, SAMPLE, "--fault-record", "rec.json", "-k", "not left_out")
    assert done.returncode == 1, done.stdout[-2000:]  # a case not handled fails the run
    assert "fault record rec.json: 1 of 4 cases handled (3 not handled); 2 cases not run" in done.stdout
    record = json.loads((tmp_path / "rec.json").read_text(encoding="utf-8"))
    got = {c["name"]: (c["group"], c["verdict"], c["kind"]) for c in record["cases"]}
    assert got == {"refused | in one line": ("bad input", "handled", "fast"), "left something": ("fault", "not handled",
                   "fast"), "needs root": ("fault", "not run", "fast"), "known": ("fault", "not handled", "fast"),
                   "bounded": ("load", "not handled", "fast"), "left out": ("load", "not run", "fast")}
    cases = {c["name"]: c for c in record["cases"]}
    assert cases["refused | in one line"]["evidence"] == "error: TMP/x.json:2: not JSON"
    assert cases["left something"]["evidence"].startswith("call failed: AssertionError: the folder was left")
    assert cases["needs root"]["evidence"] == "skipped: mounting a tmpfs needs root"
    assert cases["known"]["evidence"] == "known failure (xfail): DVC's own"
    assert cases["bounded"]["evidence"].startswith("call failed: AssertionError: 2 waited")
    assert cases["bounded"]["test"] == "test_sample.py::test_bounded"  # its three parameters, one case
    assert cases["left out"]["evidence"] == "deselected (-k 'not left_out')"
    assert record["command"] == "python -m pytest -q -p no:cacheprovider -p tests.faults.record --rootdir " \
                                f"{tmp_path} --fault-record rec.json -k 'not left_out' test_sample.py"
    assert record["commit"] and record["date"] and len(record["load"]["after"]) == 3
    assert records.check_record(record) == []
    page = values(record)
    assert page["tally"] == "1 of 4 cases handled (3 not handled); 2 cases not run"
    assert "- **known** (here): known failure (xfail): DVC's own" in page["not_handled"]
    assert "| refused / in one line | here | handled | error: TMP/x.json:2: not JSON |" in page["tables"]


def test_nothing_is_written_without_a_case_and_a_bad_mark_is_refused(tmp_path):
    done = run(tmp_path, "def test_plain():\n    pass\n", "--fault-record", "rec.json")
    assert done.returncode == 0 and "not written (no test marked fault ran)" in done.stdout
    assert not (tmp_path / "rec.json").exists()
    bad = 'import pytest\n\n@pytest.mark.fault("oops", "x", "here")\ndef test_x():\n    pass\n'
    done = run(tmp_path, bad)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout[-2000:] + done.stderr[-2000:]
    assert "give (group, name, origin), the group one of bad input, fault, load" in done.stderr
    twice = 'import pytest\n\n@pytest.mark.fault("load", "x", "a")\ndef test_a():\n    pass\n\n' \
            '@pytest.mark.fault("load", "x", "b")\ndef test_b():\n    pass\n'
    done = run(tmp_path, twice)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR and "name each case once" in done.stderr
