import hashlib
import shutil

import pytest

from deca.errors import ConfigError, DataError
from deca.registry import Dropped, Example, get_task
from deca.tasks.cnn_dailymail import fix_missing_period, read as read_files
from deca.text import detokenize
from pipelines.rows import to_row
from tests.conftest import shared_file
from tests.deca.tasks._check import read_records


def read(split, root):
    return read_records("cnn_dailymail", split, root)


def sha1(url):
    return hashlib.sha1(url.encode("utf-8")).hexdigest()


def test_fixture_example_end_to_end(fixture_corpora):
    task = get_task("cnn_dailymail")
    examples = read("train", fixture_corpora)
    first = examples[0]
    assert first.context == (
        "Fixture Town, Ohio (CNN)The town library reopened on Saturday after two years of repairs. "
        "\u201cWe missed it,\u201d said one reader, who waited outside before dawn. "  # '.' added
        "The new building has a caf\u00e9, a roof garden and twice as many books.")
    assert first.answer == "The Fixture Town library reopened after two years. Readers waited outside before dawn."
    row = to_row(task, "train", first)
    url = (fixture_corpora / "cnn_dailymail/url_lists/all_train.txt").read_text().splitlines()[0]
    assert row["id"] == sha1(url)
    assert row["question"] == "what is the summary?"
    assert row["answer"] == "the fixture town library reopened after two years. readers waited outside before dawn."
    for field in ("context", "question", "answer"):
        assert detokenize(row[f"{field}_tokens"]) == row[field]
    assert row["context"] == first.context.lower()  # far below the 400-token default


def test_nfkc_daily_mail_story_and_periods(fixture_corpora):
    examples = read("train", fixture_corpora)
    assert examples[1].context.endswith("finished the 100 m course in ten minutes!")  # NBSP -> space, '!' kept
    assert examples[1].answer == "Twelve robot lawnmowers raced in Example County. The winner took ten minutes."
    assert examples[2].context == ("By DAILY MAIL REPORTER. A cat has been riding the same bus every morning for a "
                                   "year. Drivers say the first time it boarded, nobody noticed.")  # ligature fi
    assert fix_missing_period("He said \u201cno\u201d") == "He said \u201cno\u201d"
    assert fix_missing_period("@highlight") == "@highlight" and fix_missing_period("") == ""


def test_missing_story_is_a_counted_drop(fixture_corpora):
    records = read("validation", fixture_corpora)
    assert [type(r) for r in records] == [Example, Dropped, Example]
    drop = records[1]
    assert drop.reason == "story_missing" and drop.detail.startswith("all_val.txt:2 http://web.archive.org/")
    assert len(read("test", fixture_corpora)) == 2


def test_context_truncation_is_a_row_hook(fixture_corpora):
    task = get_task("cnn_dailymail")
    example = read("train", fixture_corpora)[0]
    full = to_row(task, "train", example, options=task.make_options({"max_context_tokens": None}))
    cut = to_row(task, "train", example, options=task.make_options({"max_context_tokens": 5}))
    assert cut["context_tokens"] == full["context_tokens"][:5]
    assert cut["context"] == detokenize(cut["context_tokens"]) == "fixture town, ohio ("
    assert full["context"].startswith(cut["context"]) and full["answer"] == cut["answer"]
    with pytest.raises(ConfigError, match="max_context_tokens"):
        to_row(task, "train", example, options=task.make_options({"max_context_tokens": 0}))


@pytest.mark.corpora
def test_real_cnn_stories(shared_corpora, tmp_path):
    stories = shared_corpora / "cnn_dailymail/cnn/stories"
    no_dailymail = tmp_path / "dailymail/stories"  # the mirror has CNN stories only
    no_dailymail.mkdir(parents=True)
    task = get_task("cnn_dailymail")
    test_list = shared_file("cnn_dailymail/url_lists/all_test.txt")
    records = list(read_files("test", [test_list, stories, no_dailymail], task.make_options()))
    examples = [r for r in records if isinstance(r, Example)]
    urls = test_list.read_text().splitlines()
    assert len(records) == len(urls) == 11490
    assert [e.id for e in examples] == [sha1(u) for u in urls[:10]]  # the 10 real test stories
    assert sum(isinstance(r, Dropped) and r.reason == "story_missing" for r in records) == 11480
    assert examples[0].context.startswith("Marseille, France (CNN)The French prosecutor leading an investigation")
    assert examples[0].answer.startswith('Marseille prosecutor says "so far no videos were used in the crash '
                                         'investigation" despite media reports.')
    train_list = shared_file("cnn_dailymail/samples/allennlp_fixture_url_lists/all_train.txt")
    train = list(read_files("train", [train_list, stories, no_dailymail], task.make_options()))
    assert len(train) == 10 and all(isinstance(r, Example) for r in train)
    for e in examples + train:
        assert e.context and e.answer.endswith((".", "!", "?", '"', "'", ")", "\u2019", "\u201d"))
        row = to_row(task, "test", e)
        assert len(row["context_tokens"]) <= 400 and detokenize(row["context_tokens"]) == row["context"]


def _copy(fixture_corpora, tmp_path):
    shutil.copytree(fixture_corpora / "cnn_dailymail", tmp_path / "cnn_dailymail")
    return tmp_path / "cnn_dailymail"


def test_bad_story_files(fixture_corpora, tmp_path):
    root = _copy(fixture_corpora, tmp_path)
    url = (root / "url_lists/all_test.txt").read_text().splitlines()[0]
    story = root / "cnn/stories" / f"{sha1(url)}.story"
    original = story.read_bytes()
    story.write_bytes(original.replace(b"It took three years", b"It took @highlight three years"))
    with pytest.raises(DataError, match="'@highlight' in the middle of a line") as exc:
        read("test", tmp_path)
    assert (exc.value.path, exc.value.line) == (str(story), 3)
    story.write_bytes(original.replace(b"footbridge", b"footbr\xeddge"))
    with pytest.raises(DataError, match="UTF-8") as exc:
        read("test", tmp_path)
    assert (exc.value.path, exc.value.line) == (str(story), 1)


def test_missing_story_directory_and_url_list(fixture_corpora, tmp_path):
    root = _copy(fixture_corpora, tmp_path)
    shutil.rmtree(root / "dailymail")
    with pytest.raises(DataError, match="story directory not found") as exc:
        read("train", tmp_path)
    assert exc.value.path == str(root / "dailymail/stories") and "dailymail_stories.tgz" in str(exc.value)
    (root / "dailymail/stories").mkdir(parents=True)
    (root / "url_lists/all_train.txt").unlink()
    with pytest.raises(DataError, match="file not found"):
        read("train", tmp_path)
