"""What the fast cases share: `deca` run in this process with its output captured, what a refusal must look
like, tiny inputs (a checkpoint, processed data, a requests file), and `POST /predict` to the `deca serve` app
without a server."""
from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import json
import traceback
from pathlib import Path
from typing import Callable, Iterator

from bench.faults.case import ROOT, NotHandled, must, patched

FIXTURES = ROOT / "tests" / "fixtures"
ENOSPC = "No space left on device"
ASK = ["--context", "a fine film .", "--question", "is this review negative or positive?"]


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
    if "Traceback" in text:
        raise NotHandled(f"a traceback: {text.strip().splitlines()[-1]}")
    if code == 0:
        raise NotHandled("accepted: exit code 0")
    for needle in expect:
        if needle not in text:
            raise NotHandled(f"exit {code}, but not saying {needle!r}: {error_line(text)}")
        if once and text.count(needle) != 1:
            raise NotHandled(f"the message is printed {text.count(needle)} times: {error_line(text)}")
    return next((line.strip() for line in text.splitlines() if expect and expect[0] in line), error_line(text))


def empty_dirs(root: Path) -> list[str]:
    """Folders under `root` left empty."""
    return [str(d) for d in root.rglob("*") if d.is_dir() and not any(d.iterdir())]


def full_disk(*args, **kwargs):
    """How a write fails on a full disk (pyarrow's words; no file name, like a failed write() or fsync())."""
    raise OSError(errno.ENOSPC, f"Error writing bytes to file. Detail: [errno 28] {ENOSPC}")


def tiny_checkpoint(tmp: Path) -> Path:
    """A tiny untrained MQAN saved as `deca train` saves its best model (vocabulary inside)."""
    from bench.support import tiny_model
    from mqan.checkpoint import save_checkpoint

    return save_checkpoint(tmp / "model" / "model.pt", tiny_model())


def processed(tmp: Path) -> Path:
    """A processed folder with tiny SST train and validation splits, and a vocabulary next to it."""
    from bench.support import row, write_split

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


def predict_refuses(args: list[str], expect: str, content: bytes | None = None) -> Callable[[Path], str]:
    """`deca predict --checkpoint <tiny> ARGS` (with --input FILE holding `content` if given; else a question)
    is refused with `expect`."""
    def check(tmp: Path) -> str:
        asked = ["--input", str(write_requests(tmp, content))] if content is not None else ASK
        base = dict(zip(asked[::2], asked[1::2]))
        base.update(zip(args[::2], args[1::2]))
        return refused(["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--device", "cpu",
                        *[x for kv in base.items() for x in kv]], expect)
    return check


@contextlib.contextmanager
def model_not_loaded() -> Iterator[None]:
    """Fail the case if `deca predict` loads its model inside the block: the refusal must come first."""
    from mqan import checkpoint

    real, loaded = checkpoint.load_model, []

    def load_model(*args, **kwargs):
        loaded.append(args[0])
        return real(*args, **kwargs)

    with patched(checkpoint, "load_model", load_model):
        yield
    must(not loaded, f"the model was loaded before the refusal ({loaded[0]})" if loaded else "")


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


def post(app, body: bytes) -> tuple[int, dict]:
    """(status, JSON body) of `POST /predict` with `body`, through the ASGI app in this process; an error that
    escapes the app is a 500, as uvicorn would answer."""
    try:
        sent = asyncio.run(asgi_post(app, body))
    except Exception as exc:  # noqa: BLE001
        return 500, {"error": f"{type(exc).__name__}: {exc}"[:200]}
    status, _, answer = response(sent)
    return status, answer


def server_refuses(body: Callable[[], bytes], status: int, expect: str) -> Callable[[Path], str]:
    """`POST /predict` with `body()` to the `deca serve` app (default limits) is answered `status` with
    `expect` in its one-line error, and the model is not asked."""
    def check(tmp: Path) -> str:
        from infer.serve.app import create_app

        backend = StubBackend()
        got, answer = post(create_app(backend), body())
        must(got == status, f"answered {got}, not {status}: {answer.get('error', answer)}")
        must(expect in str(answer.get("error")), f"the error does not say {expect!r}: {answer.get('error')}")
        must(not backend.asked, "the model was asked")
        return f"{got}: {answer['error'][:90]}"
    return check
