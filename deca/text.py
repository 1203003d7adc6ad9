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


SURROGATE_FIX = ("write the character itself, or both halves of its escape (\\ud83d\\ude00); half a pair is no "
                 "character and cannot be written as UTF-8")


def lone_surrogate(value) -> str | None:
    """Where a parsed JSON value (or a string) holds a lone surrogate, e.g. from the escape ``"\\ud800"``:
    ``field 'context': a lone surrogate \\ud800 at character 3``; None when every string is text."""
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                at = f"field {where!r}: " if where else ""
                return f"{at}a lone surrogate \\u{ord(item[exc.start]):04x} at character {exc.start + 1}, not text"
        elif isinstance(item, dict):
            stack.extend((str(k), k) for k in item)
            stack.extend((f"{where}.{k}" if where else str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in enumerate(item))
    return None


def may_hold_surrogates(line: str) -> bool:
    """Whether a JSON line can hold a lone surrogate at all (only a \\uD800-\\uDFFF escape makes one): the cheap
    test before `lone_surrogate`."""
    return "\\ud" in line or "\\uD" in line
