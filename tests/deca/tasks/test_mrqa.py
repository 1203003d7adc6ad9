import gzip
import importlib.util

import pytest

from deca.errors import DataError
from deca.registry import get_task, resolve_tasks
from deca.tasks.mrqa import DATASETS, OFFICIAL_COUNTS
from tests.conftest import FIXTURE_CORPORA, ROOT, shared_file
from tests.deca.tasks._check import bad_file, read_split, row_of

IN_DOMAIN = ("squad", "newsqa", "triviaqa", "searchqa", "hotpotqa", "naturalquestions")
OUT_OF_DOMAIN = ("drop", "race", "duorc", "relationextraction", "textbookqa", "bioasq")
TASK = get_task("mrqa.squad")
HEADER = b'{"header": {"dataset": "SQuAD", "split": "dev"}}\n'
LINE = b'{"context": "Paris is in France.", "qas": [{"qid": "q1", "question": "Where is Paris?", "answers": ["France"]}]}\n'


def test_family_is_declared_once_with_the_right_splits():
    assert resolve_tasks("mrqa.*") == sorted(f"mrqa.{n}" for n in IN_DOMAIN + OUT_OF_DOMAIN)
    for name in IN_DOMAIN:
        task = get_task(f"mrqa.{name}")
        assert (list(task.splits), task.group, task.metric, task.eval_only) == (["train", "validation"], "mrqa", "nf1",
                                                                                False)
        assert all(s.url and s.md5 for s in task.sources)
    for name in OUT_OF_DOMAIN:
        task = get_task(f"mrqa.{name}")
        assert (list(task.splits), task.group, task.metric, task.eval_only) == (["validation"], "mrqa", "nf1", True)
    (bioasq,) = get_task("mrqa.bioasq").sources
    assert bioasq.url is None and "participants-area.bioasq.org" in bioasq.note


@pytest.mark.parametrize("name", IN_DOMAIN + OUT_OF_DOMAIN)
def test_every_fixture_file_reads(fixture_corpora, name):
    task = get_task(f"mrqa.{name}")
    for split in task.splits:
        examples, drops = read_split(task, split, fixture_corpora)
        assert examples and not drops
        for example in examples:
            row = row_of(task, split, example)
            assert row["answer"] in row["context"]


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("mrqa.triviaqa")
    (example,), _ = read_split(task, "validation", fixture_corpora)
    row = row_of(task, "validation", example)
    assert row["id"] == "f1b46f42b1d3e76db3f42823640da528"  # the MRQA qid
    assert row["question"] == "into which sea does the danube flow?"
    assert row["context"] == "[doc] [tle] danube [par] the danube flows into the black sea."
    assert row["answer"] == "black sea"
    assert row["answers"] == ["black sea", "the black sea"]


def test_fixture_files_are_what_the_generator_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_mrqa_fixture", ROOT / "tests/fixtures/make_mrqa_fixture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    written = module.main(tmp_path)
    assert len(written) == len(DATASETS) + sum(1 for row in DATASETS.values() if row[1])
    for path in written:
        rel = path.relative_to(tmp_path)
        assert path.read_bytes() == (FIXTURE_CORPORA / "mrqa" / rel).read_bytes(), rel


def test_missing_header_names_file_and_line(tmp_path):
    files = bad_file(tmp_path, TASK, "validation", gzip.compress(LINE))
    with pytest.raises(DataError, match=r"SQuAD\.jsonl\.gz:1: missing header"):
        list(TASK.read("validation", files, None))


def test_malformed_line_names_file_and_line(tmp_path):
    files = bad_file(tmp_path, TASK, "validation", gzip.compress(HEADER + LINE + LINE[:40] + b"\n"))
    with pytest.raises(DataError, match=r"SQuAD\.jsonl\.gz:3: malformed JSON line"):
        list(TASK.read("validation", files, None))
    files = bad_file(tmp_path, TASK, "validation", gzip.compress(HEADER + b'{"context": "c", "qas": [{}]}\n'))
    with pytest.raises(DataError, match=r"SQuAD\.jsonl\.gz:2: malformed MRQA record"):
        list(TASK.read("validation", files, None))


def test_truncated_gzip_and_invalid_utf8_name_the_file(tmp_path):
    data = gzip.compress(HEADER + LINE * 50)
    files = bad_file(tmp_path, TASK, "validation", data[: len(data) - 12])
    with pytest.raises(DataError, match=r"SQuAD\.jsonl\.gz:\d+: damaged gzip stream"):
        list(TASK.read("validation", files, None))
    files = bad_file(tmp_path, TASK, "validation", gzip.compress(HEADER + LINE.replace(b"France", b"Fran\xe7e")))
    with pytest.raises(DataError, match=r"SQuAD\.jsonl\.gz:2: not valid UTF-8"):
        list(TASK.read("validation", files, None))


@pytest.mark.corpora
def test_real_squad_dev_count():
    files = [shared_file("mrqa/dev/SQuAD.jsonl.gz")]
    examples = list(TASK.read("validation", files, TASK.make_options()))
    assert len(examples) == OFFICIAL_COUNTS["mrqa.squad"]["validation"] == 10507
    assert len({e.id for e in examples}) == 10507
    first = examples[0]
    assert (first.id, first.question, first.answer) == (
        "b0626b3af0764c80b1e6f22c114982c1", "Which NFL team represented the AFC at Super Bowl 50?", "Denver Broncos")
    assert all(e.answer in e.context for e in examples)
