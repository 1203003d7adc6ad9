"""What `POST /predict` accepts, checked before anything reaches the model.

A body is one request ``{"context": ..., "question": ...[, "id": ...]}`` or a JSON array of them. Every
check answers a 4xx status with ``{"error": "<one line naming the field and the fix>", "errors": [...]}``:
a body over `max_body_bytes` is 413, a body that is not JSON (or not UTF-8) is 400, and a request
with a missing, misspelt, mistyped, empty or too long field, too many requests, or an id given twice
is 422. The limits are the `Limits` of the app (`deca serve --max-requests/--max-chars`).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, TypeAdapter, ValidationError, field_validator

from infer.limits import InputLimits

FIX = 'send {"context": "...", "question": "..."} (optionally "id"), or a JSON array of them'
STRUCTURAL = {"missing", "extra_forbidden", "model_type", "model_attributes_type", "dict_type", "list_type"}


@dataclass(frozen=True)
class Limits(InputLimits):
    """Bounds of one `POST /predict` call: each request's text as everywhere (infer/limits.py), and the
    number of requests."""

    max_requests: int = 64  # requests in one call

    @property
    def max_body_bytes(self) -> int:
        """Room for every field at its longest, JSON-escaped (6 bytes a character at worst), plus syntax."""
        per_request = 6 * (self.max_context_chars + self.max_question_chars + self.max_id_chars) + 100
        return self.max_requests * per_request + 100

    def describe(self) -> dict:
        return {**asdict(self), "max_body_bytes": self.max_body_bytes}


class RequestError(Exception):
    """A refused call: the HTTP status and the body to answer with."""

    def __init__(self, status: int, message: str, errors: list[dict] | None = None):
        super().__init__(message)
        self.status, self.message, self.errors = status, message, errors or []

    def body(self) -> dict:
        return {"error": self.message, "errors": self.errors}


def request_adapters(limits: Limits) -> tuple[TypeAdapter, TypeAdapter]:
    """The pydantic validators of one request and of a list of 1..max_requests requests, under `limits`."""
    text = dict(strict=True, min_length=1, pattern=r"\S")

    class PredictRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")

        context: Annotated[str, StringConstraints(max_length=limits.max_context_chars, **text)]
        question: Annotated[str, StringConstraints(max_length=limits.max_question_chars, **text)]
        id: Any = None

        @field_validator("id")
        @classmethod
        def _id(cls, value: Any) -> str | None:
            if value is None:
                return None
            if isinstance(value, bool) or not isinstance(value, (str, int)):
                raise ValueError(f"must be a string or an integer, not {_json_type(value)}")
            if isinstance(value, str) and not 1 <= len(value) <= limits.max_id_chars:
                raise ValueError(f"must have 1 to {limits.max_id_chars} characters, got {len(value)}")
            return str(value)

    many = Annotated[list[PredictRequest], Field(min_length=1, max_length=limits.max_requests)]
    return TypeAdapter(PredictRequest), TypeAdapter(many)


def parse_body(raw: bytes, adapters: tuple[TypeAdapter, TypeAdapter], limits: Limits) -> tuple[list[dict], bool]:
    """(requests as dicts with a string id, whether the body was one request rather than a list)."""
    if len(raw) > limits.max_body_bytes:
        raise RequestError(413, f"the body has {len(raw):,} bytes; at most {limits.max_body_bytes:,} are accepted "
                                f"(at most {limits.max_requests} requests of {limits.max_context_chars:,} "
                                "context characters)")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise RequestError(400, f"the body is JSON nested too deeply; {FIX}") from None
    except UnicodeDecodeError as exc:
        raise RequestError(400, f"the body is not UTF-8 text (byte {exc.start}); {FIX}") from None
    except json.JSONDecodeError as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}; "
                                f"{FIX}") from None
    single = not isinstance(doc, list)
    if single and not isinstance(doc, dict):
        raise RequestError(422, f"the body is {_json_type(doc)}; {FIX}", [{"field": "body", "message": FIX}])
    try:
        parsed = adapters[0 if single else 1].validate_python(doc)
    except ValidationError as exc:
        raise RequestError(422, *_explain(exc)) from None
    except RecursionError:
        raise RequestError(422, f"a request holds JSON nested too deeply; {FIX}") from None
    items = [parsed] if single else parsed
    rows = [{"id": str(i) if r.id is None else r.id, "context": r.context, "question": r.question}
            for i, r in enumerate(items)]
    seen: dict[str, int] = {}
    for i, row in enumerate(rows):
        if row["id"] in seen:
            message = f"{row['id']!r} is also the id of request [{seen[row['id']]}]; give every request its own id"
            raise RequestError(422, f"[{i}].id: {message}", [{"field": f"[{i}].id", "message": message}])
        seen[row["id"]] = i
    return rows, single


def _explain(exc: ValidationError) -> tuple[str, list[dict]]:
    """(one line, every error as {field, message}) for a body that does not validate."""
    errors = exc.errors(include_url=False)
    out = []
    for e in errors:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e["loc"]).lstrip(".") or "body"
        out.append({"field": where, "message": _message(e)})
    first = out[0]
    more = f" (and {len(out) - 1} more error(s), listed in 'errors')" if len(out) > 1 else ""
    fix = f"; {FIX}" if errors[0]["type"] in STRUCTURAL else ""
    return f"{first['field']}: {first['message']}{more}{fix}", out


def _message(error: dict) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind == "missing":
        return "this field is required"
    if kind == "extra_forbidden":
        return "unknown field (only context, question and id are read)"
    if kind == "string_pattern_mismatch":
        return "must contain some text, not only spaces"
    if kind == "too_long" and "max_length" in ctx:
        return f"at most {ctx['max_length']} requests in one call, got {ctx.get('actual_length')}; split them"
    if kind == "too_short" and "min_length" in ctx:
        return "the list of requests is empty"
    if kind == "string_too_long":
        return f"at most {ctx['max_length']:,} characters, got {len(error['input']):,}; shorten it"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "string_type":
        return f"must be a string, not {_json_type(error['input'])}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"each request must be a JSON object, not {_json_type(error['input'])}"
    if kind == "list_type":
        return f"must be a JSON array, not {_json_type(error['input'])}"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    return error["msg"]


def _json_type(value: Any) -> str:
    names = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "an array",
             dict: "an object", type(None): "null"}
    return names.get(type(value), type(value).__name__)
