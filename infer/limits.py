"""How much one request may ask of the model: the one input limit of `deca predict`, `deca serve` and
`deca evaluate` of custom tasks.

A request's context may have at most `max_context_chars` characters (default 20,000, about 5,000 tokens:
longer than any decaNLP context but CNN/DM's longest articles), its question a tenth of that, its id 200;
context and question must hold some text. Without a limit one 1 MB context held `deca predict` for
minutes at 1.5 GB; with it, the work of one request is bounded before the model runs. The check is the
same everywhere and says which field, how long it is, and the fix.

`row_cost` is a prepared request's work in the unit the server's batches are budgeted in: its context +
question tokens (`deca serve --batch-tokens`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deca.text import SURROGATE_FIX, lone_surrogate

MAX_CONTEXT_CHARS = 20_000


@dataclass(frozen=True)
class InputLimits:
    """Bounds of one request's text."""

    max_context_chars: int = MAX_CONTEXT_CHARS
    max_question_chars: int = MAX_CONTEXT_CHARS // 10
    max_id_chars: int = 200
    RAISE = " (or raise --max-chars)"  # how the user can raise the limit, after "shorten it" (not a field)

    @classmethod
    def from_chars(cls, max_chars: int) -> "InputLimits":
        """The limits of `--max-chars N`: contexts of N characters, questions of N / 10."""
        return cls(max_context_chars=max_chars, max_question_chars=max(1, max_chars // 10))

    def problems(self, request: dict[str, Any]) -> list[tuple[str, str]]:
        """(field, message) for every field of `request` ({"context", "question"[, "id"]}) that breaks a limit."""
        found = []
        for field, limit in (("context", self.max_context_chars), ("question", self.max_question_chars)):
            value = request.get(field)
            if not isinstance(value, str):
                found.append((field, "this field is required" if value is None
                              else f"must be a string, not {type(value).__name__}"))
            elif not value.strip():
                found.append((field, "must contain some text, not only spaces"))
            elif lone_surrogate(value):
                found.append((field, f"{lone_surrogate(value)}; {SURROGATE_FIX}"))
            elif len(value) > limit:
                found.append((field, f"at most {limit:,} characters, got {len(value):,}; shorten it{self.RAISE}"))
        rid = request.get("id")
        if rid is not None and (isinstance(rid, bool) or not isinstance(rid, (str, int))):
            found.append(("id", f"must be a string or an integer, not {type(rid).__name__}"))
        elif isinstance(rid, str) and not 1 <= len(rid) <= self.max_id_chars:
            found.append(("id", f"must have 1 to {self.max_id_chars} characters, got {len(rid)}"))
        elif isinstance(rid, str) and lone_surrogate(rid):
            found.append(("id", f"{lone_surrogate(rid)}; {SURROGATE_FIX}"))
        return found



def row_cost(row: dict) -> int:
    """A tokenized row's context + question tokens: what one example costs a decoding batch."""
    return len(row["context_tokens"]) + len(row["question_tokens"])
