"""The hashes `deca contamination` compares (pipelines/contamination.py: what counts as overlap, and why), and
the numpy operations on sorted arrays of them that its Beam transforms run.

A text is its tokens `normalize`d (lowercased, revtok's whitespace marks stripped, empty ones dropped). A
text of at least n words (NGRAM = 13) is hashed by its word n-grams, a shorter one whole; each hash is the
64-bit blake2b digest of the words joined by U+001F, UTF-8, read big-endian as a uint64 (`hash_array`;
`text_hashes` as a set). A hash is common for a training task when at least `common_threshold` of its
examples hold it (a template, a label, boilerplate). On sorted uint64 arrays of hashes: `bucket_bounds` cuts
one into hash buckets (by the top bits), `example_counts` counts the distinct examples holding each hash,
and `merge_train` sums a training task's counts over its shards.

Plain numpy: no Beam, no files.
"""
from __future__ import annotations

import math
from hashlib import blake2b as _blake2b
from itertools import accumulate
from typing import Iterable, Iterator, Sequence

import numpy as np

NGRAM = 13
COMMON_SHARE = 0.01
COMMON_MIN = 10


def normalize(tokens: Iterable[str]) -> list[str]:
    """Tokens as compared: lowercased, revtok's whitespace marks stripped, empty ones dropped."""
    out = []
    for t in tokens:
        t = t.strip().lower()
        if t:
            out.append(t)
    return out


def hash_array(tokens: Sequence[str], n: int = NGRAM) -> tuple[np.ndarray, bool]:
    """(the uint64 blake2b hashes of a text's word n-grams, or of its whole token sequence when shorter than
    n, in order with repeats (empty for an empty text); whether it is shorter than n). The bytes hashed are
    the `normalize`d words joined by U+001F, UTF-8: one encoded string per text, each n-gram a slice of it."""
    words = _normalized(tokens)
    if not words:
        return np.empty(0, np.uint64), True
    text = "\x1f".join(words)
    data = text.encode("utf-8")
    if len(words) < n:
        return np.frombuffer(_blake2b(data, digest_size=8).digest(), dtype=">u8").astype(np.uint64), True
    sizes = map(len, words) if text.isascii() else (len(w.encode("utf-8")) for w in words)
    starts = [0, *accumulate(size + 1 for size in sizes)]  # word k: data[starts[k]:starts[k + 1] - 1]
    digests = b"".join([_blake2b(data[starts[i]:starts[i + n] - 1], digest_size=8).digest()
                        for i in range(len(words) - n + 1)])
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64), False


def _normalized(tokens: Sequence[str]) -> list[str]:
    """`normalize`, lowercasing the text at once (tokens joined by NUL, which no case mapping crosses)."""
    joined = "\x00".join(tokens)
    if joined.count("\x00") != max(len(tokens) - 1, 0):  # a token holding NUL itself
        return normalize(tokens)
    return [w for w in (t.strip() for t in joined.lower().split("\x00")) if w]


def text_hashes(tokens: Iterable[str], n: int = NGRAM) -> set[int]:
    """The 64-bit hashes of a text's word n-grams, or of its whole token sequence when shorter than n
    (none for an empty text)."""
    return hashes_and_kind(tokens, n)[0]


def hashes_and_kind(tokens: Iterable[str], n: int = NGRAM) -> tuple[set[int], bool]:
    """(`text_hashes`, whether the text is shorter than n: hashed whole)."""
    hashes, short = hash_array(tokens, n)
    return set(hashes.tolist()), short


def common_threshold(train_examples: int, share: float = COMMON_SHARE, minimum: int = COMMON_MIN) -> int:
    """The training examples a hash must occur in to be common (a template, a label, boilerplate)."""
    return max(minimum, math.ceil(share * train_examples))


def bucket_bounds(hashes: np.ndarray, buckets: int) -> Iterator[tuple[int, int, int]]:
    """(bucket, start, stop) of the non-empty buckets of sorted uint64 `hashes`: bucket b holds the hashes
    whose top log2(buckets) bits are b (`buckets` a power of two)."""
    width = 1 << 64 - (buckets.bit_length() - 1)
    edges = np.searchsorted(hashes, np.array([b * width for b in range(1, buckets)], dtype=np.uint64))
    starts = [0, *edges.tolist()]
    stops = [*edges.tolist(), len(hashes)]
    for b, (lo, hi) in enumerate(zip(starts, stops)):
        if hi > lo:
            yield b, lo, hi


def example_counts(hashes: np.ndarray, examples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted distinct hashes, how many distinct examples hold each) from parallel arrays of hashes and the
    example each came from."""
    if not len(hashes):
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    order = np.lexsort((examples, hashes))
    h, e = hashes[order], examples[order]
    first = np.ones(len(h), bool)
    first[1:] = (h[1:] != h[:-1]) | (e[1:] != e[:-1])
    return np.unique(h[first], return_counts=True)


def merge_train(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """One training task's (sorted hashes, counts) of a bucket from those of its shards: counts summed."""
    if len(parts) == 1:
        return parts[0]
    h = np.concatenate([p[0] for p in parts])
    c = np.concatenate([p[1] for p in parts]).astype(np.int64)
    hashes, inverse = np.unique(h, return_inverse=True)
    counts = np.zeros(len(hashes), np.int64)
    np.add.at(counts, inverse, c)
    return hashes, counts
