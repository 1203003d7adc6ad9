"""Fixtures of the `deca serve` tests: a trained miniature checkpoint, a real uvicorn server, Chromium.

The checkpoint is a tiny MQAN trained for a few steps on the miniature SST and WOZ data (as in
tests/train/test_recipe.py), saved in the current format (vocabulary inside). The server is the real
app on a real socket (127.0.0.1, a free port) in a background thread, with small limits so that the
oversized-request checks stay cheap.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import torch

from deca.config import ModelConfig, Params, TrainConfig
from mqan.checkpoint import save_checkpoint
from infer.serve.app import LocalBackend, bind, create_app
from infer.serve.engine import Predictor
from infer.serve.schema import Limits
from tests.infer.answers import assert_same_answers  # noqa: F401  (the serve tests import it from here)

TASKS = ["sst", "woz.en"]
STEPS = 100
LIMITS = Limits(max_requests=8, max_context_chars=500, max_question_chars=100, max_id_chars=20)


@pytest.fixture(scope="session")
def checkpoint(mini_data, tmp_path_factory) -> Path:
    """A tiny MQAN trained for 30 steps on the miniature SST and WOZ data."""
    from train.recipe import local_recipe

    processed, vocab, tasks = mini_data
    if not set(TASKS) <= set(tasks):
        pytest.skip(f"fixtures for {TASKS} are needed")
    torch.set_num_threads(1)
    p = Params()
    p.data = dataclasses.replace(p.data, processed_dir=str(processed), vocab_path=str(vocab))
    p.model = ModelConfig(dimension=16, ff_hidden=16, heads=2, transformer_layers=1, rnn_layers=1, dropout=0.1,
                          embedding_dim=16, word_vectors=None, max_generative_vocab=200, max_answer_length=12)
    p.train = TrainConfig(tasks=TASKS, iterations=STEPS, token_budget=400, lr=1e-2, warmup=5, val_every=0,
                          save_every=0, max_val_examples=4, val_batch_size=4, seed=3,
                          storage_dir=str(tmp_path_factory.mktemp("serve-runs")))
    recipe = local_recipe(p)
    for _ in range(STEPS):
        recipe.train_step()
    return save_checkpoint(tmp_path_factory.mktemp("serve") / "model.pt", recipe.core, {"iteration": STEPS})


@pytest.fixture(scope="session")
def predictor(checkpoint) -> Predictor:
    return Predictor.load(checkpoint, device="cpu")


class ThreadServer:
    """The app served by uvicorn on 127.0.0.1 (a free port) in a background thread."""

    def __init__(self, app):
        import uvicorn

        sock = bind("127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)
        assert not self.thread.is_alive(), "uvicorn did not stop"


@pytest.fixture(scope="session")
def server(predictor):
    """(base URL, backend) of a real server; batches of at most 4 rows, waiting at most 20 ms."""
    backend = LocalBackend(predictor, max_batch=4, max_wait_ms=20)
    srv = ThreadServer(create_app(backend, LIMITS))
    yield srv.url, backend
    srv.stop()


def http(url: str, body=None, method: str | None = None, raw: bytes | None = None,
         timeout: float = 60) -> tuple[int, object, object]:
    """(status, decoded JSON body, headers) of one call; `body` is sent as JSON, `raw` as is."""
    data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data is not None else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read()), response.headers
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read()), err.headers


@pytest.fixture(scope="session")
def chromium() -> str:
    """Chromium's path; Debian's `chromium` package is installed when missing (skip only if that fails)."""
    from tests.browser import chromium_path

    if chromium_path() is None:
        try:
            done = subprocess.run(["apt-get", "install", "-y", "chromium"], capture_output=True, text=True,
                                  timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"chromium is not installed and `apt-get install -y chromium` could not run: {exc}")
        if done.returncode != 0 or chromium_path() is None:
            pytest.skip("chromium is not installed and `apt-get install -y chromium` failed: "
                        + (done.stderr or done.stdout)[-500:])
    return shutil.which("chromium") or chromium_path()
