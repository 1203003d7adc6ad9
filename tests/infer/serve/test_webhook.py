"""`deca serve --follow --webhook URL` (infer/serve/webhook.py, infer/registry_webhook.py).

Fast: the signature is MLflow's own (mlflow.webhooks.delivery._generate_hmac_signature); deliveries unsigned,
badly signed, stale or from the future are refused (401) with one line, malformed bodies get 400, a signed move of
the served alias wakes the follower and nothing else does, also over HTTP on the real app; bad --webhook options are refused in one line; a store
that cannot push is said to be polled only. Against a real MLflow server (the registration, a real `deca serve
--webhook` process): the slow tests of tests/infer/serve/test_follow.py, which share its server.
"""
from __future__ import annotations

import json
import time

import pytest

from deca.cli import main
from infer.serve.webhook import (AliasHook, Refused, Registration, TOLERANCE_S, parse_event, signature, verify,
                                 webhook_options)

SECRET = "s3cret-for-the-tests-0123456789"


def payload(name="decanlp", alias="champion", version="2", entity="model_version_alias", action="created") -> bytes:
    return json.dumps({"entity": entity, "action": action, "timestamp": "2026-11-28T04:00:00+00:00",
                       "data": {"name": name, "alias": alias, "version": version}}).encode()


def signed(body: bytes, secret: str = SECRET, at: float | None = None, delivery: str = "d-1") -> dict:
    """The headers MLflow sends with `body` (mlflow/webhooks/delivery.py)."""
    stamp = str(int(time.time() if at is None else at))
    return {"X-MLflow-Delivery-Id": delivery, "X-MLflow-Timestamp": stamp,
            "X-MLflow-Signature": signature(secret, delivery, stamp, body), "Content-Type": "application/json"}


def test_the_signature_is_the_one_mlflow_sends():
    from mlflow.webhooks.delivery import _generate_hmac_signature

    text = json.dumps({"data": {"name": "modèle", "alias": "champion", "version": "3"}})
    assert signature(SECRET, "abc-123", "1795840110", text.encode()) == \
        _generate_hmac_signature(SECRET, "abc-123", "1795840110", text)
    assert signature(SECRET, "abc-123", "1795840110", text.encode()) != signature(SECRET, "abc-124", "1795840110",
                                                                                   text.encode())


def test_a_valid_delivery_passes_and_another_signature_beside_it_does_not_matter():
    body = payload()
    verify(SECRET, signed(body), body)
    headers = signed(body)
    headers["X-MLflow-Signature"] = "v1,bm90LXRoaXMtb25l " + headers["X-MLflow-Signature"]  # a rotated secret's
    verify(SECRET, headers, body)


@pytest.mark.parametrize("tamper,message", [
    (lambda h, b: ({**h, "X-MLflow-Signature": signed(b, "another-secret-0123456789")["X-MLflow-Signature"]}, b),
     "bad signature"),
    (lambda h, b: (h, b.replace(b'"2"', b'"9"')), "bad signature"),  # the body changed after signing
    (lambda h, b: ({**h, "X-MLflow-Delivery-Id": "d-2"}, b), "bad signature"),
    (lambda h, b: ({k: v for k, v in h.items() if k != "X-MLflow-Signature"}, b), "no x-mlflow-signature header"),
    (lambda h, b: ({**h, "X-MLflow-Timestamp": "yesterday"}, b), "not Unix seconds"),
    (lambda h, b: (signed(b, at=time.time() - TOLERANCE_S - 60), b), "s old"),
    (lambda h, b: (signed(b, at=time.time() + TOLERANCE_S + 60), b), "s ahead"),
])
def test_forged_stale_and_unsigned_deliveries_are_refused(tamper, message):
    headers, body = tamper(signed(payload()), payload())
    with pytest.raises(Refused, match=message) as refused:
        verify(SECRET, headers, body)
    assert refused.value.status == 401


def test_a_delivery_a_little_late_or_early_is_accepted():
    body = payload()
    for skew in (-TOLERANCE_S + 5, TOLERANCE_S - 5):
        verify(SECRET, signed(body, at=time.time() + skew), body)


@pytest.mark.parametrize("body,message", [(b"not json", "not JSON"), (b"[1, 2]", "not an MLflow webhook payload"),
                                          (b'{"entity": "x", "data": 3}', "not an MLflow webhook payload"),
                                          (b"\xff\xfe", "not JSON")])
def test_a_signed_body_that_is_no_payload_gets_400(body, message):
    with pytest.raises(Refused, match=message) as refused:
        parse_event(body)
    assert refused.value.status == 400


def test_parse_event_reads_mlflows_payload():
    assert parse_event(payload(version="7")) == ("model_version_alias.created",
                                                 {"name": "decanlp", "alias": "champion", "version": "7"})


def test_only_a_signed_move_of_the_served_alias_wakes_the_follower():
    woken, said = [], []
    hook = AliasHook("decanlp", "champion", SECRET, lambda: woken.append(1), said.append)
    for body in (payload(name="other"), payload(alias="staging"), payload(action="deleted"),
                 payload(entity="model_version", action="created")):
        status, answer = hook.receive(signed(body), body)
        assert status == 200 and "ignored" in answer
    assert woken == [] and said == []
    forged = payload(version="5")
    assert hook.receive(signed(forged, "not-the-secret-0123456789"), forged, "10.1.2.3")[0] == 401
    assert woken == [] and said == ["refused a webhook call from 10.1.2.3: bad signature (the webhook's secret is "
                                    "not $DECA_WEBHOOK_SECRET)"]
    status, answer = hook.receive(signed(forged), forged)
    assert status == 200 and answer == {"following": "models:/decanlp@champion", "version": "5"} and woken == [1]


def test_the_route_on_the_real_app_over_http(predictor):
    import urllib.error
    import urllib.request

    from infer.serve.app import LocalBackend, create_app
    from infer.serve.webhook import MAX_BODY_BYTES, add_hook_route

    from .conftest import ThreadServer

    woken, said = [], []
    app = create_app(LocalBackend(predictor))
    add_hook_route(app, AliasHook("decanlp", "champion", SECRET, lambda: woken.append(1), said.append))
    server = ThreadServer(app)

    def post(body: bytes, headers: dict) -> tuple[int, dict]:
        request = urllib.request.Request(f"{server.url}/hooks/mlflow", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    try:
        body = payload(version="4")
        forged = post(body, signed(body, "not-the-secret-0123456789"))
        huge = post(b" " * (MAX_BODY_BYTES + 1), signed(body))
        accepted = post(body, signed(body))
    finally:
        server.stop()
    assert forged[0] == 401 and "bad signature" in forged[1]["error"]
    assert huge[0] == 413
    assert accepted == (200, {"following": "models:/decanlp@champion", "version": "4"}) and woken == [1]
    assert said == ["refused a webhook call from 127.0.0.1: bad signature (the webhook's secret is not "
                    "$DECA_WEBHOOK_SECRET)"]


@pytest.mark.parametrize("argv,env,message", [
    (["--webhook", "http://10.0.0.5:8000"], {"DECA_WEBHOOK_SECRET": SECRET}, "--webhook goes with --follow"),
    (["--follow", "300", "--webhook", "10.0.0.5:8000"], {"DECA_WEBHOOK_SECRET": SECRET},
     "--webhook takes this server's base URL"),
    (["--follow", "300", "--webhook", "http://10.0.0.5:8000"], {}, "needs a secret of at least 16 characters"),
    (["--follow", "300", "--webhook", "http://10.0.0.5:8000"], {"DECA_WEBHOOK_SECRET": "short"}, "(got 5;"),
])
def test_bad_webhook_options_are_refused_in_one_line(argv, env, message, capsys, monkeypatch):
    monkeypatch.delenv("DECA_WEBHOOK_SECRET", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert main(["serve", "--model", "models:/decanlp@champion", *argv]) == 1
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_the_secret_comes_from_the_environment_only():
    assert webhook_options(None, 30.0, {}) is None
    assert webhook_options("https://serve.example.org/decanlp/", 30.0, {"DECA_WEBHOOK_SECRET": SECRET}) == SECRET


@pytest.mark.parametrize("store", ["sqlite:///mlflow.db", "file:///tmp/mlruns", "./mlruns"])
def test_a_store_that_cannot_push_is_polled_only(store):
    said = []
    registration = Registration(store, "http://10.0.0.5:8000", SECRET, 30.0, said.append)
    registration.start()
    assert registration.done.wait(10)
    registration.stop()
    assert said == [f"no webhook: the registry {store} is not a tracking server (only `mlflow server` delivers "
                    "webhooks); polling only, every 30 s"] and registration.webhook_id is None


def test_webhook_names_tell_servers_apart_within_mlflows_rules():
    from infer.registry_webhook import webhook_name

    assert webhook_name("http://10.0.0.5:8000") == "deca-serve-10.0.0.5-8000"
    assert webhook_name("https://serve.example.org/decanlp") == "deca-serve-serve.example.org-443"
    assert webhook_name("http://[::1]:8001/") == "deca-serve-1-8001"
    long = webhook_name("http://" + "a" * 80 + ".example.org:9")
    assert len(long) <= 62 and long[-1].isalnum()
