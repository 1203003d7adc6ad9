"""The hashes `deca contamination` compares (pipelines/contamination_hashes.py): word n-grams of the
normalized tokens, or the whole text when shorter, as blake2b of the joined words; the common threshold."""
from __future__ import annotations

from pipelines import contamination_hashes as H


def test_hashes_are_ngrams_or_the_whole_short_text():
    words = [f" w{i} " for i in range(15)]
    assert len(H.text_hashes(words)) == 3
    assert H.text_hashes([" A ", "b "]) == H.text_hashes(["a", " B"])  # lowercased, whitespace marks ignored
    assert len(H.text_hashes(words[:12])) == 1 and H.text_hashes([]) == set() and H.text_hashes([" "]) == set()
    assert H.common_threshold(80) == 10 and H.common_threshold(100_000) == 1000


def test_the_hashes_are_blake2b_of_the_joined_normalized_words():
    """hash_array (one encoded string per text, n-grams as slices, lowercased at once) against the
    definition, on tokens that are not ASCII, change length when encoded or lowercased, or hold separators."""
    import hashlib

    def reference(tokens, n):
        words = [t.strip().lower() for t in tokens]
        words = [w for w in words if w]
        h = lambda ws: int.from_bytes(hashlib.blake2b("\x1f".join(ws).encode("utf-8"), digest_size=8).digest(), "big")
        if not words:
            return set()
        return {h(words)} if len(words) < n else {h(words[i:i + n]) for i in range(len(words) - n + 1)}

    texts = [[" Straße ", "ΟΔΟΣ", " İstanbul", "日本語 ", "\u2003em\u2003", "a\x00b", "x"] * 3,
             [" ΣΑΣ ", "ǅ", "ﬃ", "\x1f", "", "  ", "Ω"] * 3, [f" w{i} " for i in range(20)], ["\x00", "A"] * 9]
    for tokens in texts:
        for n in (1, 2, 13):
            assert H.text_hashes(tokens, n) == reference(tokens, n), (tokens, n)
