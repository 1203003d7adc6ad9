"""deca.metric_logging.check_server: a tracking server that does not answer is an error at once, naming the
URI and the fix; any HTTP answer counts as up; non-HTTP stores are not checked. Real sockets on loopback."""
from __future__ import annotations

import http.server
import socket
import threading
import time

import pytest

from deca.metric_logging import TrackingServerDown, check_server
from tests.faults.tools import NotMLflow  # another web server: the fault tests'


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Refusing(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # an authenticating proxy in front of the server: 401 for /health too
        self.send_response(401)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_a_closed_port_fails_at_once_naming_the_uri_and_the_fix():
    uri = f"http://127.0.0.1:{closed_port()}"
    start = time.monotonic()
    with pytest.raises(TrackingServerDown) as err:
        check_server(uri)
    assert time.monotonic() - start < 5
    text = str(err.value)
    assert text.startswith(f"MLflow tracking server {uri} is not reachable (Connection refused)")
    assert "fix: start it (e.g. `bash infra/mlflow/server.sh`)" in text and "unset MLFLOW_TRACKING_URI" in text


def test_a_server_that_accepts_but_never_answers_times_out():
    with socket.socket() as listener:  # listens (the kernel accepts the connection) but never replies
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        uri = f"http://127.0.0.1:{listener.getsockname()[1]}"
        with pytest.raises(TrackingServerDown, match=r"not reachable \(no answer within 0.5 s\)"):
            check_server(uri, timeout=0.5)


def test_any_http_answer_counts_and_other_stores_are_not_checked():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        check_server(f"http://127.0.0.1:{server.server_address[1]}/")
    finally:
        server.shutdown()
        server.server_close()
    check_server("sqlite:///nowhere/mlflow.db")  # local stores: nothing to reach
    check_server("file:///nowhere/mlruns")


class FakeMLflow(NotMLflow):
    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"experiments": []}')


@pytest.mark.parametrize("handler, refused", [(NotMLflow, True), (FakeMLflow, False)])
def test_a_server_that_is_not_mlflow_is_named(handler, refused):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    uri = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        if refused:
            with pytest.raises(TrackingServerDown) as err:
                check_server(uri)
            head = str(err.value).splitlines()[0]
            assert head == (f"{uri} answers, but not as an MLflow tracking server (HTTP 404, text/html, to "
                            "/api/2.0/mlflow/experiments/search): MLFLOW_TRACKING_URI names another service")
        else:
            check_server(uri)
    finally:
        server.shutdown()
        server.server_close()
