"""infer/mlflow_errors.py: the project's bad-input errors as MLflow's scoring server answers them (400, the
project's line as the message), without a server; tests/infer/test_mlflow_model.py checks a real one."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from deca.errors import DataError, DecaError
from infer.mlflow_errors import FIX, BadModelInput, one_line, refuse_deep_json

NESTED = b"[" * 100_000 + b"]" * 100_000
NO_MODEL = SimpleNamespace(metadata=None)  # the body is parsed before the model is asked anything


def test_a_bad_input_is_a_400_whose_message_is_the_projects_line():
    from mlflow.exceptions import MlflowException

    error = BadModelInput("model input:1: context: must contain some text, not only spaces")
    assert isinstance(error, MlflowException) and isinstance(error, DecaError)  # 400 there, one line in `deca`
    assert error.get_http_status_code() == 400 and str(error) == error.line
    error.message = f"Failed to predict data '<the whole input>'. \nError: {error.message}"  # as the server does
    body = json.loads(error.serialize_as_json())
    assert body["message"] == "model input:1: context: must contain some text, not only spaces"
    assert body["error_code"] == "INVALID_PARAMETER_VALUE"


def test_one_line_joins_the_fix():
    error = DataError("model input", "context: this field is required", line=2, fix=FIX)
    assert one_line(error) == f"model input:2: context: this field is required; fix: {FIX}"


def test_a_body_nested_too_deeply_is_a_400_not_a_500(monkeypatch):
    from mlflow.pyfunc import scoring_server

    # MLflow's own decoder (a model loaded earlier in this process wrapped it), restored after the test
    original = getattr(scoring_server._decode_json_input, "__wrapped__", scoring_server._decode_json_input)
    monkeypatch.setattr(scoring_server, "_decode_json_input", original)
    with pytest.raises(RecursionError):  # MLflow alone: uncaught, a bare 500
        scoring_server.invocations(NESTED, "application/json", NO_MODEL, None)
    assert refuse_deep_json()
    wrapped = scoring_server._decode_json_input
    assert refuse_deep_json() and scoring_server._decode_json_input is wrapped  # loading twice wraps once
    with pytest.raises(BadModelInput) as refused:
        scoring_server.invocations(NESTED, "application/json", NO_MODEL, None)
    assert refused.value.get_http_status_code() == 400
    assert json.loads(refused.value.serialize_as_json())["message"] == f"the body is JSON nested too deeply; {FIX}"
    assert scoring_server._decode_json_input(b'{"dataframe_records": []}') == {"dataframe_records": []}
