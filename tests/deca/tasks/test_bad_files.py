"""Bad raw files of every line-based reader: the error names the file, the line and what is wrong."""
import json

import pytest

from deca.registry import get_task
from tests.conftest import ROOT
from tests.deca.tasks._check import assert_refused

FIXTURES = ROOT / "tests" / "fixtures"

# (task, split, raw bytes, expected message); "data" holds the bytes as latin-1 text, so that invalid UTF-8
# can be written in JSON
CASES = [(c["task"], c["split"], c["data"].encode("latin-1"), c["match"])
         for c in json.loads((FIXTURES / "bad_raw_files.json").read_text(encoding="utf-8"))]


@pytest.mark.parametrize("task, split, data, match", CASES)
def test_bad_raw_file_is_refused_naming_file_and_line(tmp_path, task, split, data, match):
    assert_refused(tmp_path, get_task(task), split, data, match)
