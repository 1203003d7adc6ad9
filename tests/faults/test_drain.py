"""Issue 42's serving drains: `deca serve` (and `--ray`) on SIGTERM stops taking calls, answers those that
finish within --grace-s and answers the rest 503 with Retry-After (no bare 500, no traceback); the
non-finite --slice-ms, --max-wait-ms and --grace-s that it used to accept are refused.

The drains here run the app in this process with a model that takes 10 ms a piece (a call of "long" contexts
needs 5 s, far past the 0.3 s of grace); real server processes sent SIGTERM are
tests/infer/serve/test_serve_cli.py's (slow)."""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from tests.faults.tools import asgi_post, case, refused, response, tiny_checkpoint

I = "issue 42: serving drains"
GRACE_S = 0.3


@pytest.mark.parametrize("option, value, expect", [
    case("bad input", "deca serve --slice-ms nan", I, "--slice-ms", "nan", "--slice-ms must be a finite number, got nan"),
    case("bad input", "deca serve --slice-ms inf", I, "--slice-ms", "inf", "--slice-ms must be a finite number, got inf"),
    case("bad input", "deca serve --max-wait-ms nan", I, "--max-wait-ms", "nan",
         "--max-wait-ms must be a finite number, got nan"),
    case("bad input", "deca serve --grace-s -1", I, "--grace-s", "-1", "--grace-s must be at least 0, got -1"),
    case("bad input", "deca serve --grace-s inf", I, "--grace-s", "inf", "--grace-s must be a finite number, got inf"),
])
def test_deca_serve_refuses_an_option(tmp_path, observed, option, value, expect):
    """`deca serve OPTION VALUE` is refused with `expect`, before the model loads."""
    observed(refused(["serve", "--checkpoint", str(tiny_checkpoint(tmp_path)), option, value], expect))


class Pieces:
    """A batch decoded 10 ms a piece: 500 pieces for a "long" context, else 2."""

    def __init__(self, rows: list[dict]):
        self.rows, self.answers = rows, None
        self.left = 500 if rows[0]["context"] == "long" else 2

    def run(self, seconds: float) -> bool:
        deadline = time.monotonic() + seconds
        while self.left:
            time.sleep(0.01)
            self.left -= 1
            if time.monotonic() >= deadline and self.left:
                return False
        self.answers = [{"id": r["id"], "answer": "", "tokens": []} for r in self.rows]
        return True


class SlowBackend:
    """The local backend's batching (infer/serve/engine.Batcher, turns of 20 ms) over `Pieces`."""

    def __init__(self):
        from infer.serve.engine import Batcher

        self.batcher = Batcher(None, max_batch=8, max_wait_ms=1, batch_tokens=100, slice_ms=20, start=Pieces)

    async def answer(self, requests: list[dict]) -> list[dict]:
        rows = [{**r, "context_tokens": ["w"] * (90 if r["context"] == "long" else 1), "question_tokens": ["?"],
                 "answer_tokens": []} for r in requests]  # a long row and a short one: over 100 tokens padded
        return await self.batcher.submit(rows)

    def drain(self, grace_s: float, left_s: float | None = None) -> None:
        self.batcher.drain(grace_s, left_s)

    def health(self) -> dict:
        return {}


async def post(app, context: str) -> tuple[int, dict, dict]:
    """(status, headers, JSON body) of `POST /predict` of one request to the ASGI app, in this event loop."""
    return response(await asgi_post(app, json.dumps({"context": context, "question": "why?"}).encode()))


def drained_calls() -> dict[str, tuple[int, dict, dict]]:
    """What a drain of GRACE_S answers a long call and a short call in flight and a call after it began."""
    from infer.serve.app import create_app, drain

    async def go():
        errors: list[dict] = []
        asyncio.get_running_loop().set_exception_handler(lambda _loop, context: errors.append(context))
        backend = SlowBackend()
        app = create_app(backend)
        try:
            long, short = (asyncio.ensure_future(post(app, c)) for c in ("long", "short"))
            await asyncio.sleep(0.05)
            drain(app, GRACE_S)
            new = await post(app, "short")
            got = {"long": await long, "short": await short, "new": new}
        finally:
            await backend.batcher.stop()
        assert not errors, f"errors logged: {[e.get('message') for e in errors]}"
        return got

    return asyncio.run(go())


def refused_503(body: dict, headers: dict, status: int, expect: str) -> str:
    """The evidence that a call got 503 with Retry-After and a one-line JSON error saying `expect`."""
    assert status == 503, f"answered {status}: {body}"
    assert int(headers.get("retry-after", 0)) > 0, f"no Retry-After: {headers}"
    assert expect in body.get("error", "") and "\n" not in body["error"], f"the error: {body}"
    return f"503, Retry-After {headers['retry-after']}: {body['error']}"


@pytest.mark.fault("fault", "deca serve drain: a call not answered within the grace gets 503 with Retry-After", I)
def test_a_call_unanswered_in_the_grace_gets_503(observed):
    """A call needing 5 s when a drain of 0.3 s begins: 503 with Retry-After, while a short one is answered."""
    got = drained_calls()
    assert got["short"][0] == 200, f"the short call in flight was answered {got['short'][0]}: {got['short'][2]}"
    status, headers, body = got["long"]
    observed(refused_503(body, headers, status, f"did not answer within its {GRACE_S:g} s grace"))


@pytest.mark.fault("fault", "deca serve drain: a new call during the drain gets 503 with Retry-After", I)
def test_a_new_call_while_draining_gets_503(observed):
    status, headers, body = drained_calls()["new"]
    observed(refused_503(body, headers, status, "takes no new calls"))
