"""The model's vocabulary: four specials, then data/vocab.txt in its order (most frequent first).

Index layout (the original decaNLP's, kept so that its conventions carry over):

    0 ' UNK '   unknown token (spaces included, as in the original; detokenizes to "UNK")
    1 <pad>     padding
    2 <init>    first decoder input
    3 <eos>     end of answer

then every token of data/vocab.txt, in file order (a token equal to a special is skipped). The
*generative* vocabulary (the output softmax, paper Eq. 11) is the first `max_generative` entries,
specials included, exactly as the original's ``vocab.itos[:50000]``. The input side does not depend
on this list: every token is featurized from its string (mqan/inputs.py), so a token past the
generative vocabulary, or absent from data/vocab.txt, keeps its pre-trained vector and char n-grams.
' UNK ' cannot collide with data: the data is lowercased.

`fingerprint` is the sha256 of the token list; checkpoints store it and refuse another vocabulary.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable, Sequence

from deca.errors import DataError

UNK, PAD, INIT, EOS = " UNK ", "<pad>", "<init>", "<eos>"
SPECIALS = (UNK, PAD, INIT, EOS)
UNK_ID, PAD_ID, INIT_ID, EOS_ID = range(4)


class Vocab:
    """Token <-> id maps with the generative prefix. Build with `Vocab.load` or `Vocab.from_tokens`."""

    def __init__(self, itos: Sequence[str], max_generative: int, counts: Sequence[int] | None = None):
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(f"the first four tokens must be {SPECIALS}, got {tuple(itos[:4])}")
        if max_generative < len(SPECIALS):
            raise ValueError(f"max_generative must be at least {len(SPECIALS)} (the specials), got {max_generative}")
        self.itos: list[str] = list(itos)
        self.stoi: dict[str, int] = {}
        for i, tok in enumerate(self.itos):
            if tok in self.stoi:
                raise ValueError(f"token {tok!r} appears twice (ids {self.stoi[tok]} and {i})")
            self.stoi[tok] = i
        self.counts = list(counts) if counts is not None else None
        self.generative_size = min(max_generative, len(self.itos))
        self._fingerprint: str | None = None

    @classmethod
    def from_tokens(cls, tokens: Iterable[str], max_generative: int) -> "Vocab":
        """Specials followed by `tokens` (most frequent first; duplicates and specials skipped)."""
        itos = list(SPECIALS)
        seen = set(itos)
        for tok in tokens:
            if tok not in seen:
                seen.add(tok)
                itos.append(tok)
        return cls(itos, max_generative)

    @classmethod
    def load(cls, path: str | Path, max_generative: int) -> "Vocab":
        """Read data/vocab.txt: one ``json.dumps(token) + "\\t" + count`` per line, most frequent first."""
        path = Path(path)
        if not path.exists():
            raise DataError(path, "vocabulary file not found", fix="run `deca prepare` (or `dvc repro`) to build it")
        itos, counts = list(SPECIALS), [0] * len(SPECIALS)
        seen = set(itos)
        with open(path, encoding="utf-8") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                if not line:
                    continue
                text, sep, count = line.rpartition("\t")
                try:
                    if not sep:
                        raise ValueError("no tab")
                    token = json.loads(text)
                    if not isinstance(token, str):
                        raise ValueError("not a string")
                    n = int(count)
                except ValueError as exc:
                    raise DataError(path, f"malformed line {line[:80]!r} ({exc})", line=lineno,
                                    fix='each line must be json.dumps(token) + "\\t" + count; rebuild with `deca prepare`'
                                    ) from None
                if token in seen:
                    if token in SPECIALS:
                        continue
                    raise DataError(path, f"token {token!r} listed twice", line=lineno,
                                    fix="rebuild the vocabulary with `deca prepare`")
                seen.add(token)
                itos.append(token)
                counts.append(n)
        return cls(itos, max_generative, counts)

    def __len__(self) -> int:
        return len(self.itos)

    def id(self, token: str) -> int:
        """Full-vocabulary id of `token` (UNK_ID when absent)."""
        return self.stoi.get(token, UNK_ID)

    def is_generative(self, token: str) -> bool:
        """Whether `token` is in the output vocabulary (can be generated, not only copied)."""
        i = self.stoi.get(token)
        return i is not None and i < self.generative_size

    @property
    def fingerprint(self) -> str:
        """sha256 (hex) of the token list, independent of counts and of `generative_size`."""
        if self._fingerprint is None:
            h = hashlib.sha256()
            for tok in self.itos:
                h.update(json.dumps(tok).encode("utf-8"))
                h.update(b"\n")
            self._fingerprint = h.hexdigest()
        return self._fingerprint

    def __repr__(self) -> str:
        return f"Vocab({len(self)} tokens, generative {self.generative_size}, fingerprint {self.fingerprint[:12]})"
