"""The webhook that makes an MLflow tracking server push alias moves to `deca serve --webhook URL`.

`deca serve --follow --webhook URL` registers one webhook on the tracking server for the event
``model_version_alias.created`` (MLflow sends it whenever an alias is set, a moved one included), pointing at
URL/hooks/mlflow and signed with the serving process's secret; it is named after URL's host and port, so two
servers do not clash and a restarted server replaces its own (`ensure`); `delete` removes it at shutdown.
After registering, `check_delivery` asks the tracking server to send a test event, which tells at once whether
it can reach URL.

Only an `mlflow server` with a SQL store delivers webhooks: a file store has none (the server answers 500
"FileStore does not support create_webhook"), and a client writing a sqlite file or a folder directly has no
server to deliver them (`unsupported`). MLflow's server delivers over https to public addresses only, unless its
operator starts it with MLFLOW_WEBHOOK_ALLOWED_SCHEMES=http,https (plain http) and
MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=true (a loopback or private address); the errors say so (`FIX`).

The calls go through MLflow's REST helper with few retries and a short timeout: MLflowClient would retry a
500 or an unreachable server for minutes, which would hold up the start or the shutdown of the serving process.
"""
from __future__ import annotations

import re
import urllib.parse

from mlflow.exceptions import MlflowException
from mlflow.utils.credentials import get_default_host_creds
from mlflow.utils.rest_utils import http_request, verify_rest_response

ENDPOINT = "/api/2.0/mlflow/webhooks"
EVENT = {"entity": "MODEL_VERSION_ALIAS", "action": "CREATED"}  # model_version_alias.created
RETRIES, TIMEOUT_S = 1, 10
FIX = ("the tracking server must be `mlflow server` with a SQL store (e.g. --backend-store-uri sqlite:///mlflow.db) "
       "and, to deliver to plain http or a private address, run with MLFLOW_WEBHOOK_ALLOWED_SCHEMES=http,https and "
       "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS=true")


class WebhookUnavailable(Exception):
    """The tracking server cannot deliver webhooks to this server: one line saying why and the fix."""


def unsupported(store: str) -> str | None:
    """Why `store` can deliver no webhook (not an http(s) tracking server), or None."""
    if store.startswith(("http://", "https://")):
        return None
    return f"the registry {store} is not a tracking server (only `mlflow server` delivers webhooks)"


def webhook_name(url: str) -> str:
    """`deca-serve-HOST-PORT` of the public URL (MLflow allows letters, digits, '.', '_', '-'; under 63)."""
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    name = re.sub(r"[^A-Za-z0-9._]+", "-", f"deca-serve-{parts.hostname}-{port}").strip("-._")
    return name if len(name) <= 62 else name[:62].rstrip("-._")


def call(store: str, method: str, path: str = "", body: dict | None = None) -> dict:
    """The JSON answer of one webhook REST call to the tracking server `store`; MlflowException if refused."""
    endpoint = ENDPOINT + path
    payload = {"params": body} if method == "GET" else {"json": body}
    response = http_request(get_default_host_creds(store), endpoint, method, max_retries=RETRIES,
                            backoff_factor=1, timeout=TIMEOUT_S, **payload)
    return verify_rest_response(response, endpoint).json()


def find(store: str, name: str) -> str | None:
    """The id of the webhook called `name` on `store`, or None."""
    body: dict = {"max_results": 100}
    while True:
        page = call(store, "GET", body=body)
        for hook in page.get("webhooks", []):
            if hook.get("name") == name:
                return hook["webhook_id"]
        if not page.get("next_page_token"):
            return None
        body["page_token"] = page["next_page_token"]


def ensure(store: str, url: str, hook_url: str, secret: str) -> tuple[str, str]:
    """(id, name) of the active webhook pushing alias moves to `hook_url` with `secret`: the one named after
    `url` updated, else a new one. WebhookUnavailable (one line, with the fix) when the server cannot."""
    name = webhook_name(url)
    spec = {"url": hook_url, "events": [EVENT], "secret": secret, "status": "ACTIVE",
            "description": f"deca serve at {url}: alias moves wake its --follow"}
    try:
        found = find(store, name)
        if found is not None:
            call(store, "PATCH", f"/{found}", {**spec, "name": name})
            return found, name
        return call(store, "POST", body={**spec, "name": name})["webhook"]["webhook_id"], name
    except (MlflowException, OSError, KeyError) as exc:
        raise WebhookUnavailable(f"{store} cannot push alias moves to {hook_url} ({one_line(exc)}); {FIX}") from None


def check_delivery(store: str, webhook_id: str) -> str | None:
    """Why the tracking server could not deliver a test event to the webhook, or None when it did."""
    try:
        result = call(store, "POST", f"/{webhook_id}/test", {"event": EVENT}).get("result", {})
    except (MlflowException, OSError) as exc:
        return one_line(exc)
    if result.get("success"):
        return None
    status = result.get("response_status")
    return one_line(result.get("error_message") or f"HTTP {status}: {result.get('response_body', '')}")


def delete(store: str, webhook_id: str) -> str | None:
    """Delete the webhook; why it could not be, or None."""
    try:
        call(store, "DELETE", f"/{webhook_id}")
    except (MlflowException, OSError) as exc:
        return one_line(exc)
    return None


def one_line(exc) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."
