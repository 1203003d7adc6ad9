"""Bad requests to `mlflow models serve` (issue 42), in this process: each must be a 400 whose JSON `message` is
the project's one line naming the field and the fix, as `deca predict` says it, never MLflow's generic
"unexpected error" or a bare 500. The scoring server's `invocations` gets a body nested too deeply; the model's
input check gets bad records and params. A real server gets them in tests/infer/test_mlflow_model.py (slow)."""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from tests.faults.tools import NESTED, case, patched

G, ORIGIN = "bad input", "issue 42: MLflow serving"
ASK = "Is this review negative or positive?"


def a_400_saying(error: Exception, expect: str) -> str:
    """The JSON message of `error` as the scoring server sends it: a 400 whose message is `expect`."""
    from mlflow.exceptions import MlflowException

    assert isinstance(error, MlflowException), f"{type(error).__name__} escaped (a 500): {error}"
    body = json.loads(error.serialize_as_json())
    assert error.get_http_status_code() == 400, f"HTTP {error.get_http_status_code()}: {body['message']}"
    assert body["message"] == expect, f"400, but saying {body['message']!r}"
    return f"400: {body['message']}"


@pytest.mark.fault(G, "MLflow scoring server: a JSON body nested 100,000 deep (in process)", ORIGIN)
def test_the_scoring_server_answers_a_deep_body_400(observed):
    """The scoring server's `invocations` on a body nested 100,000 deep, once the model is loaded: a 400."""
    from mlflow.pyfunc import scoring_server

    from infer.mlflow_errors import FIX, refuse_deep_json

    with patched(scoring_server, "_decode_json_input", scoring_server._decode_json_input):
        assert refuse_deep_json(), "this MLflow has no _decode_json_input to guard"
        with pytest.raises(Exception) as escaped:  # noqa: PT011 - what escapes is the verdict
            scoring_server.invocations(NESTED, "application/json", SimpleNamespace(metadata=None), None)
    observed(a_400_saying(escaped.value, f"the body is JSON nested too deeply; {FIX}"))


@pytest.mark.parametrize("records, params, expect", [
    case(G, "MLflow model: a request whose question is null, among good ones (in process)", ORIGIN,
         [{"context": "a", "question": ASK}, {"context": "b", "question": None}], {},
         "model input:2: question: this field is required; fix: send {\"dataframe_records\": "
         "[{\"context\": \"...\", \"question\": \"...\"}]} (optionally \"id\" in each record)"),
    case(G, "MLflow model: params batch_size 0 (in process)", ORIGIN, [{"context": "a", "question": ASK}],
         {"batch_size": 0}, "params batch_size must be at least 1 (requests decoded together), got 0"),
])
def test_the_model_refuses_bad_input_400(observed, records, params, expect):
    """The logged model's input check (DecaModel.predict, before the model runs) refuses with a 400 `expect`."""
    from infer.mlflow_model import checked_input

    with pytest.raises(Exception) as escaped:  # noqa: PT011 - what escapes is the verdict
        checked_input(records, params)
    observed(a_400_saying(escaped.value, expect))
