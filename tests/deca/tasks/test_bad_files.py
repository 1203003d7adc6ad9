"""Bad raw files of every line-based reader: the error names the file, the line and what is wrong."""
import pytest

from deca.registry import get_task
from tests.deca.tasks._check import assert_refused

CASES = [  # (task, split, raw bytes, expected message)
    ("schema", "test", b"A [b/c] d.\nWho?\nb/c\n\nOnly two [x/y] lines\nx/y\n\n",
     r"schema\.txt:5: malformed schema of 2 line"),
    ("schema", "train", b"A [b/c] d.\nWho?\nb/c\n\nThe caf\xe9 [x/y].\nWho?\nx/y\n\n",
     r"schema\.txt:5: not valid UTF-8"),
    ("zre", "train", b"r\tWhere is XXX?\tA\tA is in B.\tB\nr\tWhere is XXX?\tonly three columns\n",
     r"train\.0:2: malformed line"),
    ("zre", "validation", b"r\tWhere is XXX?\tA\tA is in B.\tB\nr\tWhere is XXX?\tA\tA is in Z\xfcrich.\n",
     r"dev\.0:2: not valid UTF-8"),
    ("srl", "validation", b"WIKI1_9\t1\nThe dog barked .\n2\tbarked\t1\nwhat\t_\t_\tbarked\t_\t_\t_\tthe dog\n\n",
     r"wiki1\.dev\.qa:4: malformed question line"),
    ("srl", "train", b"WIKI1_9\t1\nThe caf\xe9 closed .\n",
     r"wiki1\.train\.qa:2: not valid UTF-8"),
    ("yelp", "test", b"Good.\t1\nNo label here\n",
     r"yelp_labelled\.txt:2: malformed line"),
    ("yelp", "test", b"Good.\t5\n",
     r"yelp_labelled\.txt:1: malformed line"),
    ("amazon", "test", b"Good.\t1\nBad.\t0\nNa\xefve.\t1\n",
     r"amazon_cells_labelled\.txt:3: not valid UTF-8"),
]


@pytest.mark.parametrize("task, split, data, match", CASES)
def test_bad_raw_file_is_refused_naming_file_and_line(tmp_path, task, split, data, match):
    assert_refused(tmp_path, get_task(task), split, data, match)
