"""Text normalization shared by preprocessing and decoding: revtok tokenization and lowercasing.

decaNLP tokenizes with revtok (``decap=False, split_punctuation=True``) and lowercases each token.
revtok keeps the spacing inside tokens (``' the '``), so ``detokenize(tokenize(s)) == s`` for
whitespace-normalized text, which is how predictions are turned back into strings.
"""
from __future__ import annotations

import revtok


def normalize_space(text: str) -> str:
    """Collapse runs of whitespace (including newlines and tabs) to one space and strip the ends."""
    return " ".join(text.split())


def prepare_text(value: str, lowercase: bool = True) -> tuple[str, list[str]]:
    """(text, tokens) exactly as `deca prepare` makes them: whitespace normalized, lowercased, revtok."""
    text = normalize_space(value)
    if lowercase:
        text = text.lower()
    return text, tokenize(text, lowercase=lowercase)


def tokenize(text: str, lowercase: bool = True) -> list[str]:
    """revtok tokens of `text` (lowercased per token, as decaNLP does)."""
    tokens = revtok.tokenize(text)
    return [t.lower() for t in tokens] if lowercase else tokens


def detokenize(tokens: list[str]) -> str:
    """Inverse of `tokenize` (up to case): revtok's detokenizer."""
    return revtok.detokenize(tokens)
