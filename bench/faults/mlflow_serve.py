"""Bad requests to `mlflow models serve` (issue 42): each must be a 400 whose JSON `message` is the project's one
line naming the field and the fix, as `deca predict` says it, never MLflow's generic "unexpected error" or a
bare 500. The slow cases are the contract test against a real server; the fast ones call the same code in this
process: the scoring server's `invocations` (a body nested too deeply) and the model's input check."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Callable

from bench.faults.bad_input import NESTED
from bench.faults.case import Case, NotHandled, must, patched

ORIGIN = "issue 42: MLflow serving"
SERVE_TEST = "tests/infer/test_mlflow_model.py::test_mlflow_models_serve_answers_as_deca_predict"


def a_400_saying(error: Exception, expect: str) -> str:
    """The JSON message of `error` as the scoring server sends it: a 400 whose message is `expect`."""
    from mlflow.exceptions import MlflowException

    must(isinstance(error, MlflowException), f"{type(error).__name__} escaped (a 500): {error}")
    body = json.loads(error.serialize_as_json())
    must(error.get_http_status_code() == 400, f"HTTP {error.get_http_status_code()}: {body['message']}")
    must(body["message"] == expect, f"400, but saying {body['message']!r}")
    return f"400: {body['message']}"


def deep_body_in_process(tmp: Path) -> str:
    """The scoring server's `invocations` on a body nested 100,000 deep, once the model is loaded: a 400."""
    from mlflow.pyfunc import scoring_server

    from infer.mlflow_errors import FIX, refuse_deep_json

    with patched(scoring_server, "_decode_json_input", scoring_server._decode_json_input):
        must(refuse_deep_json(), "this MLflow has no _decode_json_input to guard")
        try:
            scoring_server.invocations(NESTED, "application/json", SimpleNamespace(metadata=None), None)
        except Exception as exc:  # noqa: BLE001 - what escapes is the verdict
            return a_400_saying(exc, f"the body is JSON nested too deeply; {FIX}")
    raise NotHandled("accepted")


def model_refuses(records: list[dict], params: dict, expect: str) -> Callable[[Path], str]:
    """The logged model's input check (DecaModel.predict, before the model runs) refuses with a 400 `expect`."""
    def check(tmp: Path) -> str:
        from infer.mlflow_model import checked_input

        try:
            checked_input(records, params)
        except Exception as exc:  # noqa: BLE001 - what escapes is the verdict
            return a_400_saying(exc, expect)
        raise NotHandled("accepted")
    return check


def cases() -> list[Case]:
    """Bad requests to the logged model, in this process and under a real `mlflow models serve`."""
    g, ask = "bad input", "Is this review negative or positive?"
    return [
        Case(g, "MLflow model: a request whose question is null, among good ones (in process)", ORIGIN,
             model_refuses([{"context": "a", "question": ask}, {"context": "b", "question": None}], {},
                           "model input:2: question: this field is required; fix: send {\"dataframe_records\": "
                           "[{\"context\": \"...\", \"question\": \"...\"}]} (optionally \"id\" in each record)")),
        Case(g, "MLflow model: params batch_size 0 (in process)", ORIGIN,
             model_refuses([{"context": "a", "question": ask}], {"batch_size": 0},
                           "params batch_size must be at least 1 (requests decoded together), got 0")),
        Case(g, "MLflow scoring server: a JSON body nested 100,000 deep (in process)", ORIGIN, deep_body_in_process),
        Case(g, "mlflow models serve: an empty context, a missing question, a 20,001-character context", ORIGIN,
             test=SERVE_TEST),
        Case(g, "mlflow models serve: params max_answer_length 0 and batch_size -1", ORIGIN, test=SERVE_TEST),
        Case(g, "mlflow models serve: a JSON body nested 100,000 deep", ORIGIN, test=SERVE_TEST),
    ]
