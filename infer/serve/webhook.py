"""`deca serve --follow --webhook URL`: the MLflow server pushes alias moves, the follower acts on them at once.

`POST /hooks/mlflow` takes MLflow's webhook deliveries (mlflow/webhooks/delivery.py): the headers
X-MLflow-Delivery-Id, X-MLflow-Timestamp (Unix seconds) and X-MLflow-Signature ("v1,<base64 HMAC-SHA256 of
'{delivery id}.{timestamp}.{body}' under the secret>"), the body {"entity", "action", "timestamp", "data"}.
A call without a valid signature under $DECA_WEBHOOK_SECRET, or stamped more than TOLERANCE_S from now (a
replayed or forged delivery), gets 401 and one line on stderr. A signed `model_version_alias.created` for the
served NAME@ALIAS wakes the follower (follow.AliasFollower.wake), which reads the alias from the registry and
swaps the version in exactly as a poll does; any other signed event is acknowledged and ignored. A replay within
the tolerance can do no more than wake the follower once more, so delivery ids are not remembered.

`Registration` puts the webhook on the tracking server when the app starts, asks the server for a test
delivery, and deletes the webhook at shutdown (infer/registry_webhook.py); where the store cannot push (a file
store, a direct sqlite URI, a server that cannot reach URL), one line says the alias is polled only, and
serving goes on. Polling stays on in every case: a delivery lost is caught at the next poll.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import threading
import time
import urllib.parse
from typing import Callable, Mapping

from deca.errors import ConfigError

HOOK_PATH = "/hooks/mlflow"
SECRET_ENV = "DECA_WEBHOOK_SECRET"
MIN_SECRET_CHARS = 16
MAX_BODY_BYTES = 1 << 16  # an alias event is under 300 bytes
TOLERANCE_S = 300  # Standard Webhooks' five minutes: clocks apart, retries with back-off
SIGNATURE, TIMESTAMP, DELIVERY = "x-mlflow-signature", "x-mlflow-timestamp", "x-mlflow-delivery-id"


class Refused(Exception):
    """A delivery the hook refuses: `status` (401 unauthenticated, 400 malformed) and one line."""

    def __init__(self, status: int, line: str):
        super().__init__(line)
        self.status = status


def webhook_options(url: str | None, follow: float | None, environ: Mapping[str, str] = os.environ) -> str | None:
    """The secret for `--webhook url`, after refusing what cannot work (ConfigError); None without --webhook."""
    if url is None:
        return None
    if follow is None:
        raise ConfigError("--webhook goes with --follow (the alias is still polled, as a safety net), e.g. "
                          f"--model models:/decanlp@champion --follow 300 --webhook {url}")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"--webhook takes this server's base URL as the MLflow server reaches it, e.g. "
                          f"http://10.0.0.5:8000 (got {url!r}); the hook is that URL + {HOOK_PATH}")
    secret = environ.get(SECRET_ENV, "")
    if len(secret) < MIN_SECRET_CHARS:
        raise ConfigError(f"--webhook needs a secret of at least {MIN_SECRET_CHARS} characters in ${SECRET_ENV} "
                          f"(got {len(secret)}; never on the command line), e.g. export {SECRET_ENV}=$(python -c "
                          "'import secrets; print(secrets.token_hex(32))')")
    return secret


def hook_url(url: str) -> str:
    return url.rstrip("/") + HOOK_PATH


def signature(secret: str, delivery_id: str, timestamp: str, body: bytes) -> str:
    """MLflow's signature of a delivery: "v1," + base64(HMAC-SHA256(secret, f"{id}.{timestamp}.{body}"))."""
    digest = hmac.new(secret.encode(), f"{delivery_id}.{timestamp}.".encode() + body, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify(secret: str, headers: Mapping[str, str], body: bytes, now: float | None = None) -> None:
    """Refused(401) unless `body` carries a valid signature under `secret` stamped within TOLERANCE_S of `now`."""
    headers = {k.lower(): v for k, v in headers.items()}
    missing = [h for h in (SIGNATURE, TIMESTAMP, DELIVERY) if not headers.get(h)]
    if missing:
        raise Refused(401, f"no {', '.join(missing)} header (not a signed MLflow delivery)")
    stamp = headers[TIMESTAMP]
    if not stamp.isdigit():
        raise Refused(401, f"{TIMESTAMP} is {stamp[:40]!r}, not Unix seconds")
    skew = (time.time() if now is None else now) - int(stamp)
    if abs(skew) > TOLERANCE_S:
        raise Refused(401, f"timestamp {stamp} is {abs(skew):.0f} s {'old' if skew > 0 else 'ahead'} (more than "
                           f"{TOLERANCE_S} s: a replay, or this machine's clock is off)")
    expected = signature(secret, headers[DELIVERY], stamp, body)
    if not any(hmac.compare_digest(expected, given) for given in headers[SIGNATURE].split()):
        raise Refused(401, f"bad signature (the webhook's secret is not ${SECRET_ENV})")


def parse_event(body: bytes) -> tuple[str, dict]:
    """("entity.action", data) of a delivery's JSON body; Refused(400) when it is not one."""
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise Refused(400, f"the body is not JSON ({exc})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), dict):
        raise Refused(400, 'the body is not an MLflow webhook payload {"entity", "action", "data": {...}}')
    return f"{payload.get('entity')}.{payload.get('action')}", payload["data"]


class AliasHook:
    """What `POST /hooks/mlflow` does: verify, parse, and `wake` the follower on a move of `name`@`alias`."""

    def __init__(self, name: str, alias: str, secret: str, wake: Callable[[], None], say: Callable[[str], None]):
        self.name, self.alias, self.secret, self.wake, self.say = name, alias, secret, wake, say
        self.woken = 0

    def receive(self, headers: Mapping[str, str], body: bytes, sender: str = "?") -> tuple[int, dict]:
        """(HTTP status, JSON answer) of one delivery."""
        try:
            verify(self.secret, headers, body)
            event, data = parse_event(body)
        except Refused as exc:
            self.say(f"refused a webhook call from {sender}: {exc}")
            return exc.status, {"error": str(exc), "errors": []}
        if event != "model_version_alias.created" or (data.get("name"), data.get("alias")) != (self.name, self.alias):
            return 200, {"ignored": event}
        self.woken += 1
        self.wake()
        return 200, {"following": f"models:/{self.name}@{self.alias}", "version": str(data.get("version"))}


def add_hook_route(app, hook: AliasHook) -> None:
    """`POST /hooks/mlflow` on the FastAPI `app`, answered by `hook` (a plain Starlette route: the body is read
    raw, as signed, with the app's limit on its size)."""
    from fastapi.responses import JSONResponse

    from infer.serve.app import read_body

    async def mlflow_hook(request) -> JSONResponse:
        body = await read_body(request, MAX_BODY_BYTES)
        status, answer = hook.receive(request.headers, body, request.client.host if request.client else "?")
        return JSONResponse(answer, status_code=status)

    app.router.add_route(HOOK_PATH, mlflow_hook, methods=["POST"], include_in_schema=False)


class Registration:
    """The webhook on the tracking server `store` while the app runs: `start` registers it and asks for a test
    delivery (in a thread: the app must be listening to receive it), `stop` deletes it. Each outcome is one line."""

    def __init__(self, store: str, url: str, secret: str, interval_s: float, say: Callable[[str], None]):
        self.store, self.url, self.secret, self.interval, self.say = store, url, secret, interval_s, say
        self.webhook_id: str | None = None
        self.done = threading.Event()  # the registration and its test are over, whatever their outcome
        self._thread: threading.Thread | None = None

    def start(self, _loop=None) -> None:
        self._thread = threading.Thread(target=self.register, name="deca-webhook", daemon=True)
        self._thread.start()

    def register(self) -> None:
        from infer.registry_webhook import WebhookUnavailable, check_delivery, ensure, unsupported

        polling = f"polling only, every {self.interval:g} s"
        try:
            why = unsupported(self.store)
            if why:
                self.say(f"no webhook: {why}; {polling}")
                return
            try:
                self.webhook_id, name = ensure(self.store, self.url, hook_url(self.url), self.secret)
            except WebhookUnavailable as exc:
                self.say(f"no webhook: {exc}; {polling}")
                return
            failed = check_delivery(self.store, self.webhook_id)
            if failed:
                self.say(f"webhook {name} registered, but the tracking server's test delivery to "
                         f"{hook_url(self.url)} failed ({failed}): is --webhook this server's address as the "
                         f"MLflow server reaches it? {polling} until deliveries arrive")
            else:
                self.say(f"webhook {name} on {self.store}: alias moves are pushed to {hook_url(self.url)} "
                         f"(and polled every {self.interval:g} s)")
        finally:
            self.done.set()

    def stop(self) -> None:
        from infer.registry_webhook import delete

        if self._thread is not None:
            self._thread.join(timeout=30)
        if self.webhook_id is not None:
            failed = delete(self.store, self.webhook_id)
            if failed:
                self.say(f"could not delete the webhook from {self.store} ({failed}); the next `deca serve "
                         f"--webhook {self.url}` replaces it")
