import json

import pytest

from deca.errors import DataError
from mqan.vocab import EOS_ID, INIT_ID, PAD_ID, SPECIALS, UNK, UNK_ID, Vocab


def write(path, tokens):
    path.write_text("".join(f"{json.dumps(t)}\t{100 - i}\n" for i, t in enumerate(tokens)), encoding="utf-8")
    return path


def test_specials_first_then_file_order(tmp_path):
    v = Vocab.load(write(tmp_path / "vocab.txt", [" the ", ". ", " a\tb ", '"q"', " été "]), max_generative=6)
    assert v.itos[:4] == list(SPECIALS) and (UNK_ID, PAD_ID, INIT_ID, EOS_ID) == (0, 1, 2, 3)
    assert v.itos[4:] == [" the ", ". ", " a\tb ", '"q"', " été "]  # json keeps tabs/quotes/unicode intact
    assert v.counts[4:] == [100, 99, 98, 97, 96]
    assert v.generative_size == 6 and v.is_generative(". ") and not v.is_generative(" a\tb ")
    assert v.id(" été ") == 8 and v.id(" never ") == UNK_ID


def test_generative_size_is_capped_by_vocabulary(tmp_path):
    assert Vocab.load(write(tmp_path / "v.txt", ["x"]), 50000).generative_size == 5


def test_specials_in_the_file_are_skipped(tmp_path):
    v = Vocab.load(write(tmp_path / "v.txt", [" the ", "<eos>", UNK, " cat "]), 10)
    assert v.itos == [*SPECIALS, " the ", " cat "]


def test_fingerprint_is_stable_and_depends_on_order_not_counts(tmp_path):
    a = Vocab.load(write(tmp_path / "a.txt", ["x", "y"]), 10)
    b = Vocab.from_tokens(["x", "y"], 4)
    c = Vocab.from_tokens(["y", "x"], 10)
    assert a.fingerprint == b.fingerprint != c.fingerprint
    assert len(a.fingerprint) == 64


def test_malformed_line_names_file_and_line(tmp_path):
    p = tmp_path / "v.txt"
    p.write_text('"ok"\t3\nnot json\t2\n', encoding="utf-8")
    with pytest.raises(DataError) as e:
        Vocab.load(p, 10)
    assert e.value.line == 2 and str(p) in str(e.value) and "fix:" in str(e.value)
    p.write_text('"ok"\tmany\n', encoding="utf-8")
    with pytest.raises(DataError, match=":1"):
        Vocab.load(p, 10)


def test_duplicate_token_is_an_error(tmp_path):
    with pytest.raises(DataError, match="twice"):
        Vocab.load(write(tmp_path / "v.txt", ["x", "y", "x"]), 10)


def test_missing_file_tells_how_to_build_it(tmp_path):
    with pytest.raises(DataError, match="deca prepare"):
        Vocab.load(tmp_path / "nope.txt", 10)


def test_vocab_written_by_the_training_fixture_loads(mini_data):
    _, vocab_path, _ = mini_data
    v = Vocab.load(vocab_path, 50)
    assert len(v) > 50 and v.generative_size == 50
    assert " positive " in v.stoi or " negative " in v.stoi
