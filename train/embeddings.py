"""Frozen input embeddings from word-vector files (GloVe text format, optionally .gz).

As in the paper (Appendix D) and the original: [character n-gram vectors ; word vectors] for every
token of the full vocabulary, looked up by ``token.strip()`` (revtok tokens carry their spaces);
a token without a vector gets zeros. The character n-gram vectors are the JMT ones (Hashimoto et
al. 2016), a text file whose keys are ``{n}gram-{chars}``; a token's vector is the average of the
vectors of its 2-, 3- and 4-grams over ``#BEGIN#`` + characters + ``#END#`` that the file has
(torchtext's CharNGram, which the original used).

Reading is one pass over each file; only the lines of needed keys are parsed as floats.
"""
from __future__ import annotations

import gzip
import hashlib
import io
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import torch
from tqdm import tqdm

from deca.errors import DataError

NGRAMS = (2, 3, 4)


def _open(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8")


def read_vectors(path: str | Path, wanted: set[str], progress: bool = False) -> tuple[dict[str, np.ndarray], int]:
    """Vectors of the keys in `wanted` from a GloVe-format text file: ``key v1 .. vD`` per line.

    A first line ``<count> <dim>`` (word2vec text header) is skipped. A key may contain spaces (GloVe
    840B has a few): the last D fields are the vector. The first occurrence of a key wins.
    Returns (key -> float32 vector, D).
    """
    path = Path(path)
    if not path.exists():
        raise DataError(path, "word-vector file not found",
                        fix="download it (e.g. GloVe 840B 300d, JMT charNgram) or set model.word_vectors / "
                            "model.char_vectors to null to train embeddings instead")
    found: dict[str, np.ndarray] = {}
    dim = None
    lineno = 0
    try:
        with _open(path) as f:
            for lineno, line in enumerate(tqdm(f, desc=f"reading {path.name}", unit=" lines",
                                               disable=not progress, mininterval=5), 1):
                line = line.rstrip("\n").rstrip(" ")
                if not line:
                    continue
                if dim is None:
                    parts = line.split(" ")
                    if lineno == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                        continue  # word2vec header
                    dim = len(parts) - 1
                    if dim < 1:
                        raise DataError(path, "a line with no vector", line=lineno, fix="check the file format")
                spaces = line.count(" ")
                if spaces == dim:
                    key = line[: line.index(" ")]
                elif spaces > dim:
                    key = line.rsplit(" ", dim)[0]
                else:
                    raise DataError(path, f"expected {dim} numbers after the token, got {spaces}", line=lineno,
                                    fix="every line must be 'token v1 ... vD' with the same D")
                if key in wanted and key not in found:
                    values = line.rsplit(" ", dim)[1:]
                    try:
                        found[key] = np.asarray(values, dtype=np.float32)
                    except ValueError:
                        raise DataError(path, f"non-numeric vector for {key!r}", line=lineno) from None
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, OSError) as exc:
        raise DataError(path, f"cannot read ({exc})", line=lineno + 1,
                        fix="re-download the file (it may be truncated or not UTF-8)") from None
    if dim is None:
        raise DataError(path, "no vectors in the file", fix="check the file")
    return found, dim


def char_ngrams(token: str) -> list[str]:
    """The JMT keys of a (stripped) token: ``2gram-#BEGIN#a``, ``2gram-ab``, ..., ``4gram-...#END#``."""
    chars = ["#BEGIN#", *token, "#END#"]
    return [f"{n}gram-{''.join(chars[i:i + n])}" for n in NGRAMS for i in range(len(chars) - n + 1)]


def word_vectors(path: str | Path, itos: Sequence[str], progress: bool = False) -> tuple[torch.Tensor, int]:
    """[len(itos), D] table: the vector of ``token.strip()`` or zeros. Returns (table, tokens found)."""
    keys = [t.strip() for t in itos]
    found, dim = read_vectors(path, set(keys), progress)
    table = np.zeros((len(keys), dim), dtype=np.float32)
    hits = 0
    for i, k in enumerate(keys):
        v = found.get(k)
        if v is not None:
            table[i] = v
            hits += 1
    return torch.from_numpy(table), hits


def char_vectors(path: str | Path, itos: Sequence[str], progress: bool = False) -> tuple[torch.Tensor, int]:
    """[len(itos), D] table: average of the token's n-gram vectors found, or zeros."""
    grams = [char_ngrams(t.strip()) for t in itos]
    found, dim = read_vectors(path, {g for gs in grams for g in gs}, progress)
    table = np.zeros((len(itos), dim), dtype=np.float32)
    hits = 0
    for i, gs in enumerate(grams):
        vs = [found[g] for g in gs if g in found]
        if vs:
            table[i] = np.mean(vs, axis=0)
            hits += 1
    return torch.from_numpy(table), hits


def load_embeddings(itos: Sequence[str], word_path: str | Path | None = None, char_path: str | Path | None = None,
                    progress: bool = False) -> torch.Tensor | None:
    """[len(itos), D_char + D_word] frozen table ([char ; word], the original's order), or None if no file."""
    parts = []
    if char_path:
        parts.append(char_vectors(char_path, itos, progress)[0])
    if word_path:
        parts.append(word_vectors(word_path, itos, progress)[0])
    if not parts:
        return None
    return torch.cat(parts, dim=1) if len(parts) > 1 else parts[0]


def table_fingerprint(table: torch.Tensor) -> str:
    """sha256 of a table's shape and float32 bytes (stored in checkpoints to detect other vectors)."""
    h = hashlib.sha256(str(tuple(table.shape)).encode())
    h.update(table.detach().to(torch.float32).contiguous().cpu().numpy().tobytes())
    return h.hexdigest()


def iter_missing(itos: Iterable[str], table: torch.Tensor) -> Iterable[str]:
    """Tokens whose row is all zeros (no vector), for reports."""
    zero = (table == 0).all(dim=1).tolist()
    return (t for t, z in zip(itos, zero) if z)
