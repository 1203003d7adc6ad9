"""Odd text and options of issue 34: lone surrogates in every text path, JSON nested 100,000 deep in
`deca score`, a tracking URI that is not MLflow, a reader that goes away, a missing --params file, a bad
--set, an unreachable Dask scheduler. Each must be one line (file:line, option or URI), not a traceback."""
from __future__ import annotations

import contextlib
import http.server
import io
import socket
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

from bench.faults.bad_input import NESTED, forget_custom_tasks, validate_refuses
from bench.faults.case import Case, environment, must
from bench.faults.tools import FIXTURES, predict_refuses, processed, refused, run_cli

TEXT, SMALL = "issue 34: odd text", "issue 34: smaller"
SURROGATE = b'{"context": "a", "question": "b"}\n{"context": "ab\\ud800", "question": "b"}\n'


def score_refuses(line: bytes, expect: str) -> Callable[[Path], str]:
    """`deca score --predictions FILE` whose second line is `line`: refused naming FILE:2 and `expect`."""
    def check(tmp: Path) -> str:
        preds = tmp / "sst.jsonl"
        preds.write_bytes(b'{"id": "validation-0", "prediction": "positive"}\n' + line + b"\n")
        return refused(["score", "--task", "sst", "--split", "validation", "--predictions", str(preds),
                        "--data", str(processed(tmp)), "--no-progress"], f"{preds}:2", expect)
    return check


def custom_record_surrogate(tmp: Path) -> str:
    """`deca prepare` of a custom task whose record holds a lone surrogate: file:line, before Beam, no output."""
    import yaml

    path = tmp / "dev.jsonl"
    good = '{"passage": "a b", "question": "q?", "answer": "a"}'
    path.write_text(good + "\n" + good.replace("a b", "a \\ud800 b") + "\n", encoding="utf-8")
    spec = {"metric": "nf1", "fields": {"context": "passage"}, "files": {"validation": str(path)}}
    params = tmp / "params.yaml"
    params.write_text(yaml.safe_dump({"custom_tasks": {"minqa": spec}, "data": {
        "raw_dir": str(tmp / "raw"), "processed_dir": str(tmp / "out")}}), encoding="utf-8")
    try:
        line = refused(["prepare", "--params", str(params), "--tasks", "minqa"],
                       f"{path}:2: field 'passage': a lone surrogate \\ud800")
    finally:
        forget_custom_tasks()
    must(not (tmp / "out" / "minqa").exists(), "an output folder was left")
    return line


class NotMLflow(http.server.BaseHTTPRequestHandler):
    """Another web server: an HTML page for every path, 404 under /api."""

    def do_GET(self):  # noqa: N802 - the http.server name
        self.send_response(404 if "api" in self.path else 200)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(b"<html>not here</html>")

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def web_server() -> Iterator[str]:
    """The URL of a NotMLflow server on a free local port, for the block."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NotMLflow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def tracking_uri_not_mlflow(tmp: Path) -> str:
    """MLFLOW_TRACKING_URI naming a web server that is not MLflow: `deca compare --mlflow` says so in a line."""
    with web_server() as uri, environment(MLFLOW_TRACKING_URI=uri):
        return refused(["compare", "--mlflow", "decanlp"], f"{uri} answers, but not as an MLflow tracking server")


class ClosedPipe(io.StringIO):
    """Standard output whose reader went away (`deca ls | head -1` after the first line)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def reader_gone(tmp: Path) -> str:
    """`deca ls` writing to a closed pipe ends quietly: exit 141 (as `cat` would), nothing on stderr."""
    from deca.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(ClosedPipe()), contextlib.redirect_stderr(err):
        try:
            code = main(["ls"])
        except BrokenPipeError:
            code = "BrokenPipeError escaped"
    must(code == 141 and not err.getvalue(), f"exit {code}, stderr: {err.getvalue().strip()[-200:]!r}")
    return "exit 141, nothing on stderr"


def params_file_missing(tmp: Path) -> str:
    """`deca validate --params missing.yaml` is only an error (it once printed "valid (83 settings)" first)."""
    code, out, err = run_cli(["validate", "--params", str(tmp / "missing.yaml")])
    must("valid" not in out, f"it says {out.strip()!r} before its error")
    return refused(["validate", "--params", str(tmp / "missing.yaml")], "missing.yaml: no such params file")


def dask_port_refused(tmp: Path) -> str:
    """`deca prepare --runner=DaskRunner` with a scheduler address on which nothing listens: one line in 5 s."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    line = refused(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                    "--out", str(tmp / "out"), "--runner=DaskRunner",
                    f"--dask_client_address=tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler")
    seconds = time.perf_counter() - start
    must(seconds < 5, f"reported after {seconds:.1f} s")
    return f"{line} ({seconds:.1f} s)"


def cases() -> list[Case]:
    """Issue 34's odd text and smaller cases."""
    g, p = "bad input", predict_refuses
    return [
        Case(g, "deca predict --input: a lone surrogate in a context", TEXT,
             p([], "requests.jsonl:2: context: a lone surrogate \\ud800", SURROGATE)),
        Case(g, "deca predict --question with a lone surrogate", TEXT,
             p(["--question", "caf\udce9?"], "--question: a lone surrogate \\udce9")),
        Case(g, "deca prepare: a lone surrogate in a custom-task record", TEXT, custom_record_surrogate),
        Case(g, "deca score --predictions: a lone surrogate", TEXT,
             score_refuses(b'{"id": "validation-1", "prediction": "neg\\ud800"}', "a lone surrogate \\ud800")),
        Case(g, "deca score --predictions: JSON nested 100,000 deep", TEXT,
             score_refuses(b'{"id": "validation-1", "prediction": ' + NESTED + b"}", "JSON nested too deeply")),
        Case(g, "MLFLOW_TRACKING_URI naming a web server that is not MLflow (deca compare)", TEXT,
             tracking_uri_not_mlflow),
        Case(g, "deca ls | head -1: a reader that goes away", SMALL, reader_gone),
        Case(g, "deca validate --params missing.yaml: only an error", SMALL, params_file_missing),
        Case(g, "deca validate --set bogus.x=1 names --set, not params.yaml", SMALL,
             validate_refuses("bogus.x=1", "unknown key(s) 'bogus'")),
        Case(g, "deca prepare on a Dask scheduler at a refused port: reported within 5 s", SMALL, dask_port_refused),
    ]
