import gzip

import numpy as np
import pytest
import torch

from deca.config import ModelConfig
from deca.errors import DataError
from tests.conftest import shared_file
from train.embeddings import char_ngrams, char_vectors, load_embeddings, read_vectors, word_vectors
from train.model import build_model, count_parameters
from train.vocab import Vocab


def write(path, lines, gz=False):
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    if gz:
        with gzip.open(path, "wb") as f:
            f.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_word_vectors_strip_lookup_and_zeros(tmp_path, gz):
    p = write(tmp_path / ("v.txt.gz" if gz else "v.txt"),
              ["the 1 2 3", "cat 4 5 6", ". . . 7 8 9", "the 9 9 9", "über -1 0.5 2e-1"], gz)
    table, hits = word_vectors(p, [" the ", " cat ", " dog ", ". ", "über", ". . ."])
    assert table.shape == (6, 3) and table.dtype == torch.float32 and hits == 4
    assert table[0].tolist() == [1, 2, 3]  # first occurrence wins; ' the ' looked up as 'the'
    assert table[1].tolist() == [4, 5, 6]
    assert table[2].tolist() == [0, 0, 0]  # no vector -> zeros
    assert table[3].tolist() == [0, 0, 0]  # '.' is not the key ". . ." (a key with spaces)
    assert np.allclose(table[4].numpy(), [-1, 0.5, 0.2])
    assert table[5].tolist() == [7, 8, 9]


def test_word2vec_header_is_skipped(tmp_path):
    found, dim = read_vectors(write(tmp_path / "v.txt", ["2 3", "a 1 1 1", "b 2 2 2"]), {"a", "b"})
    assert dim == 3 and sorted(found) == ["a", "b"]


def test_malformed_files_name_the_line(tmp_path):
    with pytest.raises(DataError) as e:
        read_vectors(write(tmp_path / "v.txt", ["a 1 1 1", "b 2 2"]), {"a"})
    assert e.value.line == 2
    with pytest.raises(DataError, match="non-numeric"):
        read_vectors(write(tmp_path / "w.txt", ["a 1 x 1"]), {"a"})
    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError, match="re-download"):
        read_vectors(tmp_path / "bad.gz", {"a"})
    with pytest.raises(DataError, match="not found"):
        read_vectors(tmp_path / "missing.txt", {"a"})


def test_char_ngram_keys_and_average(tmp_path):
    assert char_ngrams("ab") == ["2gram-#BEGIN#a", "2gram-ab", "2gram-b#END#", "3gram-#BEGIN#ab", "3gram-ab#END#",
                                 "4gram-#BEGIN#ab#END#"]
    p = write(tmp_path / "c.txt", ["2gram-ab 1 0", "3gram-ab#END# 3 2", "1gram-a 100 100", "2gram-zz 5 5"])
    table, hits = char_vectors(p, [" ab ", "q", " UNK "])
    assert hits == 1 and table[0].tolist() == [2, 1]  # mean of the two n-grams found
    assert table[1].tolist() == [0, 0] and table[2].tolist() == [0, 0]


def test_concatenation_is_char_then_word(tmp_path):
    w = write(tmp_path / "w.txt", ["ab 7 8 9"])
    c = write(tmp_path / "c.txt", ["2gram-ab 1 2"])
    t = load_embeddings([" ab ", "x"], word_path=w, char_path=c)
    assert t.tolist() == [[1, 2, 7, 8, 9], [0, 0, 0, 0, 0]]
    assert load_embeddings(["x"]) is None


def test_real_glove_sample():
    path = shared_file("embeddings/glove.6B.100d.sample.txt.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = {line.split(" ")[0]: [float(x) for x in line.split(" ")[1:]] for line in f}
    assert len(rows) == 100
    vocab = Vocab.from_tokens([" the ", ", ", " president ", " zzzunseen ", "u.s."], 50000)
    table, hits = word_vectors(path, vocab.itos)
    assert table.shape == (len(vocab), 100) and hits == 4
    for tok in [" the ", ", ", " president ", "u.s."]:
        assert torch.equal(table[vocab.id(tok)], torch.tensor(rows[tok.strip()], dtype=torch.float32))
    assert not table[vocab.id(" zzzunseen ")].any() and not table[:4].any()  # specials have no GloVe vector


def test_build_model_reads_the_files_and_freezes_them(tmp_path):
    w = write(tmp_path / "w.txt", ["the 1 2 3 4", "cat 5 6 7 8"])
    vocab = Vocab.from_tokens([" the ", " cat "], 50)
    cfg = ModelConfig(variant="s2s", dimension=8, max_generative_vocab=50, word_vectors=str(w))
    model = build_model(cfg, vocab)
    assert model.embed.frozen and model.embed.dim == 4
    assert model.embed.table[vocab.id(" cat ")].tolist() == [5, 6, 7, 8]
    assert all(p is not model.embed.table for p in model.parameters())
    assert "embed.table" not in model.state_dict()
    trainable = build_model(ModelConfig(variant="s2s", dimension=8, max_generative_vocab=50, embedding_dim=6), vocab)
    assert trainable.embed.weight.shape == (len(vocab), 6) and trainable.embed.weight.requires_grad
    assert count_parameters(trainable) == count_parameters(model) + len(vocab) * 6 + (6 - 4) * 8 * 2


def test_trained_embeddings_cover_the_generative_vocabulary_only():
    vocab = Vocab.from_tokens([" the ", " cat ", " rare "], 5)  # generative: specials + " the "
    model = build_model(ModelConfig(variant="s2s", dimension=8, max_generative_vocab=5, embedding_dim=6), vocab)
    assert model.embed.weight.shape == (5, 6)
    ids = torch.tensor([[4, 5, 6, 0]])
    e = model.embed(ids)
    assert torch.equal(e[0, 1], e[0, 3]) and torch.equal(e[0, 2], e[0, 3])  # rarer tokens share UNK's row
    assert not torch.equal(e[0, 0], e[0, 3])
