"""What the fault tests share: a case as a parameter (`case`), `deca` run in this process with its output
captured, what a refusal must look like, tiny inputs (a checkpoint, processed data, a requests file, an alias
bomb), `POST /predict` to the `deca serve` app without a server, `deca train` up to where Ray would start, and a
web server that is not MLflow."""
from __future__ import annotations

import asyncio
import contextlib
import errno
import http.server
import io
import json
import os
import re
import threading
import traceback
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import ROOT

FIXTURES = ROOT / "tests" / "fixtures"
ENOSPC = "No space left on device"
ASK = ["--context", "a fine film .", "--question", "is this review negative or positive?"]
NESTED = b"[" * 100_000 + b"]" * 100_000
T, W, U = "issue 24: traceback", "issue 24: weak message", "issue 24: untruth"
RUN = "first"  # the run `deca train` starts in train_argv


def case(group: str, name: str, origin: str, *values, **marks) -> pytest.param:
    """One case of a parametrized fault test: its values, marked fault(group, name, origin), its id from the name."""
    return pytest.param(*values, marks=[pytest.mark.fault(group, name, origin), *marks.values()],
                        id=re.sub(r"[^\w.=-]+", "-", name).strip("-")[:70])


@contextlib.contextmanager
def patched(owner: object, attr: str, value: object) -> Iterator[None]:
    """`owner.attr` is `value` inside the block only (a case patches several things, each for part of it)."""
    old = getattr(owner, attr)
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, old)


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """These environment variables set inside the block."""
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `deca ARGV` run in this process; an exception that escapes main() is
    printed to the captured stderr as its traceback, as the console script would show it."""
    from deca.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse (--help, a usage error)
            code = exc.code if isinstance(exc.code, int) else 1
        except Exception:  # noqa: BLE001 - what the user would see: a traceback
            traceback.print_exc()
            code = 1
    return code, out.getvalue(), err.getvalue()


def error_line(text: str) -> str:
    """The first `error:` line of a command's output (else its last line)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if "error:" in line), lines[-1] if lines else "(no output)")


def refused(argv: list[str], *expect: str, once: bool = False) -> str:
    """`deca ARGV` must fail with exit code != 0, no traceback, each of `expect` in its output (each once,
    with `once`); returns its error line."""
    code, out, err = run_cli(argv)
    text = out + err
    assert "Traceback" not in text, f"a traceback: {text.strip().splitlines()[-1]}"
    assert code != 0, "accepted: exit code 0"
    for needle in expect:
        assert needle in text, f"exit {code}, but not saying {needle!r}: {error_line(text)}"
        assert not once or text.count(needle) == 1, f"the message is printed {text.count(needle)} times: " \
                                                    f"{error_line(text)}"
    return next((line.strip() for line in text.splitlines() if expect and expect[0] in line), error_line(text))


def validate_refuses(item: str, expect: str) -> str:
    """`deca validate --set ITEM` fails naming the --set once, with `expect`."""
    return refused(["validate", "--params", str(ROOT / "params.yaml"), "--dvc-yaml", "none", "--set", item],
                   f"--set {item}: ", expect, once=True)


def empty_dirs(root: Path) -> list[str]:
    """Folders under `root` left empty."""
    return [str(d) for d in root.rglob("*") if d.is_dir() and not any(d.iterdir())]


def full_disk(*args, **kwargs):
    """How a write fails on a full disk (pyarrow's words; no file name, like a failed write() or fsync())."""
    raise OSError(errno.ENOSPC, f"Error writing bytes to file. Detail: [errno 28] {ENOSPC}")


def tiny_checkpoint(tmp: Path) -> Path:
    """A tiny untrained MQAN saved as `deca train` saves its best model (vocabulary inside)."""
    from tests.support import tiny_model
    from mqan.checkpoint import save_checkpoint

    return save_checkpoint(tmp / "model" / "model.pt", tiny_model())


def processed(tmp: Path) -> Path:
    """A processed folder with tiny SST train and validation splits, and a vocabulary next to it."""
    from tests.support import row, write_split

    out = tmp / "processed"
    for split in ("train", "validation"):
        write_split(out, "sst", split, [row("sst", split, f"{split}-{i}", "positive") for i in range(4)], shards=1)
    (tmp / "vocab.txt").write_text('" a "\t3\n', encoding="utf-8")
    return out


def write_requests(tmp: Path, content: bytes) -> Path:
    """A requests file for `deca predict --input` holding `content`."""
    path = tmp / "requests.jsonl"
    path.write_bytes(content)
    return path


def predict_refuses(tmp: Path, args: list[str], expect: str, content: bytes | None = None) -> str:
    """`deca predict --checkpoint <tiny> ARGS` (with --input FILE holding `content` if given; else a question)
    is refused with `expect`."""
    asked = ["--input", str(write_requests(tmp, content))] if content is not None else ASK
    base = dict(zip(asked[::2], asked[1::2]))
    base.update(zip(args[::2], args[1::2]))
    return refused(["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--device", "cpu",
                    *[x for kv in base.items() for x in kv]], expect)


def forget_custom_tasks() -> None:
    """Declare the default params' custom tasks (none), as a new command would."""
    from deca.config import Params
    from deca.custom_tasks import declare

    declare(Params())


def alias_bomb(kind: str, levels: int = 9, width: int = 9) -> str:
    """A params file whose aliases expand to width**levels values: nested mappings or nested lists."""
    if kind == "mapping":
        lines = [f"l0: &l0 {{{', '.join(f'k{i}: lol' for i in range(width))}}}"]
        lines += [f"l{n}: &l{n} {{{', '.join(f'k{i}: *l{n - 1}' for i in range(width))}}}" for n in range(1, levels)]
    else:
        lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
        lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------- `POST /predict` to the app, without a server
class StubBackend:
    """A `deca serve` backend that answers without a model and remembers whether it was asked anything."""

    def __init__(self):
        self.asked: list[dict] = []

    async def answer(self, requests: list[dict]) -> list[dict]:
        """An empty answer per request."""
        self.asked.extend(requests)
        return [{"id": r["id"], "answer": "", "tokens": []} for r in requests]

    def health(self) -> dict:
        """Nothing to add."""
        return {}


async def asgi_post(app, body: bytes) -> list[dict]:
    """The ASGI messages the app sends for `POST /predict` with `body`, awaited in this event loop."""
    sent: list[dict] = []
    chunks = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive() -> dict:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/predict", "raw_path": b"/predict", "query_string": b"", "root_path": "",
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    await app(scope, receive, send)
    return sent


def response(sent: list[dict]) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of the messages an ASGI app sent (500 when it sent no start)."""
    start = next((m for m in sent if m["type"] == "http.response.start"), {"status": 500, "headers": []})
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    headers = {k.decode().lower(): v.decode() for k, v in start["headers"]}
    return start["status"], headers, json.loads(data or b"{}")


def server_refuses(body: bytes, status: int, expect: str) -> str:
    """`POST /predict` with `body` to the `deca serve` app (default limits) is answered `status` with `expect` in
    its one-line error, and the model is not asked; an error that escapes the app is a 500, as uvicorn answers."""
    from infer.serve.app import create_app

    backend = StubBackend()
    try:
        got, _, answer = response(asyncio.run(asgi_post(create_app(backend), body)))
    except Exception as exc:  # noqa: BLE001
        got, answer = 500, {"error": f"{type(exc).__name__}: {exc}"[:200]}
    assert got == status, f"answered {got}, not {status}: {answer.get('error', answer)}"
    assert expect in str(answer.get("error")), f"the error does not say {expect!r}: {answer.get('error')}"
    assert not backend.asked, "the model was asked"
    return f"{got}: {answer['error'][:90]}"


# ----------------------------------------------------------------- `deca train` up to where Ray would start
def train_argv(tmp: Path, *more: str) -> list[str]:
    """`deca train` on tiny SST data in `tmp` (run RUN under tmp/checkpoints, trained char n-grams only), on a Ray
    worker with one restart (the cases simulate what Ray Train does with workers; params.yaml trains locally)."""
    data = processed(tmp)
    sets = {"data.processed_dir": data, "data.vocab_path": tmp / "vocab.txt", "train.tasks": "[sst]",
            "train.storage_dir": tmp / "checkpoints", "model.word_vectors": "null", "train.num_workers": 1,
            "train.max_failures": 1, **dict(m.split("=", 1) for m in more)}
    return ["train", "--run-name", RUN, "--no-progress", *[x for k, v in sets.items() for x in ("--set", f"{k}={v}")]]


@contextlib.contextmanager
def no_ray(tmp: Path, started: list[str]) -> Iterator[str]:
    """No Ray inside the block (start_ray records that it was called), a Ray of one node with 2 CPUs for the
    resource check, MLflow in tmp/mlflow.db; yields the tracking URI."""
    import ray

    from train import driver

    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    with environment(MLFLOW_TRACKING_URI=uri), patched(driver, "start_ray", lambda params: started.append("ray")
                                                       or False), \
            patched(ray, "cluster_resources", lambda: {"CPU": 2.0}), \
            patched(ray, "nodes", lambda: [{"Alive": True, "Resources": {"CPU": 2.0}}]):
        yield uri


def statuses(uri: str) -> dict[str, str]:
    """Run name -> status of every MLflow run in the store."""
    from mlflow import MlflowClient

    c = MlflowClient(tracking_uri=uri)
    runs = c.search_runs([e.experiment_id for e in c.search_experiments()])
    return {r.info.run_name: r.info.status for r in runs}


# ----------------------------------------------------------------- a web server that is not MLflow
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
