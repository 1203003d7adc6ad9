"""The project's errors under `mlflow models serve`: a bad request is a 400 whose JSON `message` is the
project's one line, as `deca predict` prints it.

MLflow's scoring server (mlflow/pyfunc/scoring_server) answers an `MlflowException` with the HTTP status of
its error code and `serialize_as_json()` as the body; any other exception from `predict` becomes a 400 with
the generic "Encountered an unexpected error while evaluating the model" (the project's message only in the
stack trace). So `DecaModel.predict` raises `BadModelInput` for the project's bad-input errors (DataError,
ConfigError): an MlflowException with INVALID_PARAMETER_VALUE (400) and still a DecaError, so that `deca`
commands print it as one line. The server prefixes the message with a dump of the whole input ("Failed to
predict data '...'"); `serialize_as_json` sends the project's line alone.

A body nested 100,000 deep fails in the server's own `json.loads` (RecursionError) before any model code
runs, which MLflow does not catch: a bare 500. MLflow offers no hook there, so loading the model wraps the
server's `_decode_json_input` (`refuse_deep_json`) to turn that RecursionError into a 400. A logged model's
code can change the server it is loaded in: that is MLflow's models-from-code design (README).
"""
from __future__ import annotations

import json

from mlflow.exceptions import MlflowException
from mlflow.protos.databricks_pb2 import INVALID_PARAMETER_VALUE
from mlflow.pyfunc import scoring_server

from deca.errors import DecaError

FIX = 'send {"dataframe_records": [{"context": "...", "question": "..."}]} (optionally "id" in each record)'
GUARD = "deca_refuses_deep_json"  # marks the wrapped function, so that loading twice wraps once


class BadModelInput(MlflowException, DecaError):
    """A request the model refuses: HTTP 400 under `mlflow models serve`, one line everywhere."""

    def __init__(self, line: str):
        super().__init__(line, error_code=INVALID_PARAMETER_VALUE)
        self.line = line

    def serialize_as_json(self) -> str:
        return json.dumps({**json.loads(super().serialize_as_json()), "message": self.line})


def one_line(error: Exception) -> str:
    """A project error's message on one line (a DataError's "fix:" line joined with '; ')."""
    return "; ".join(part.strip() for part in str(error).splitlines() if part.strip())


def refuse_deep_json() -> bool:
    """Make MLflow's scoring server answer a body nested too deeply for `json.loads` with a 400 BadModelInput
    instead of a 500; False where this MLflow has no `_decode_json_input` to wrap (the serve test says so)."""
    decode = getattr(scoring_server, "_decode_json_input", None)
    if decode is None:
        return False
    if getattr(decode, GUARD, False):
        return True

    def decode_json_input(json_input):
        try:
            return decode(json_input)
        except RecursionError:
            raise BadModelInput(f"the body is JSON nested too deeply; {FIX}") from None

    setattr(decode_json_input, GUARD, True)
    decode_json_input.__wrapped__ = decode  # MLflow's own, for whoever needs it unwrapped
    scoring_server._decode_json_input = decode_json_input
    return True
