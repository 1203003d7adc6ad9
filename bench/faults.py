"""The fault bench: every bad input, fault and load case found so far, each run and given its verdict.

A case is handled when the project does what it should: for a bad input, the command fails with one clear
line (exit code not 0, no traceback, a message naming the file, line, option or key and the fix); for a
fault, nothing is lost or left behind and the failure is named; for load, the work of one request is
bounded and a small request is not starved by a large one. The fast cases run here, in this process, on
the real code path (`deca.cli.main([...])` with its output captured, or the library function a command
calls), each in a temporary folder, in a few seconds each at most. The slow cases (a SIGKILL, a real full
disk, a server under load, a DVC experiment) are slow tests; their verdict is the outcome of that test
(run with pytest, one run for them all). The cases of bench/bad_inputs.py (issue 12) are all here.

Prints one table per group (bad input, fault, load) and "N of M handled"; exit 1 if any case run was not
handled. `--fast` runs the fast cases only (the slow ones are listed as not run); tests/bench/test_faults.py
runs each fast case as a test.

    .venv/bin/python -m bench.faults --fast
    .venv/bin/python -m bench.faults            # and the slow tests (minutes: DVC, MLflow, Ray)
    .venv/bin/python -m bench.faults --skip test_dvc_pipeline   # all but the DVC pipeline's (a full repro)
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]

from bench import bad_inputs

GROUPS = ("bad input", "fault", "load")
FIXTURES = ROOT / "tests" / "fixtures"
ENOSPC = "No space left on device"


class NotHandled(Exception):
    """A case that was not handled; the message says what happened instead."""


@dataclass(frozen=True)
class Case:
    """One case: its group, name and where it was found; `check` (fast) or `test` (slow) gives its verdict."""

    group: str
    name: str
    origin: str
    check: Callable[[Path], str] | None = None  # returns what showed it handled; raises NotHandled
    test: str | None = None  # a slow case: the pytest node that checks it

    @property
    def slow(self) -> bool:
        """Whether the verdict comes from a slow test."""
        return self.check is None


@dataclass(frozen=True)
class Verdict:
    """What running a case gave: handled (True), not handled (False) or not run (None), and the evidence."""

    case: Case
    handled: bool | None
    detail: str
    seconds: float = 0.0


# ----------------------------------------------------------------------------- running `deca` in this process

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


def must(condition: bool, why: str) -> None:
    """Raise NotHandled(why) unless `condition`."""
    if not condition:
        raise NotHandled(why)


@contextlib.contextmanager
def patched(owner: object, attr: str, value: object) -> Iterator[None]:
    """`owner.attr` is `value` inside the block."""
    old = getattr(owner, attr)
    setattr(owner, attr, value)
    try:
        yield
    finally:
        setattr(owner, attr, old)


def empty_dirs(root: Path) -> list[str]:
    """Folders under `root` left empty."""
    return [str(d) for d in root.rglob("*") if d.is_dir() and not any(d.iterdir())]


def full_disk(*args, **kwargs):
    """How a write fails on a full disk (pyarrow's words; no file name, like a failed write() or fsync())."""
    raise OSError(errno.ENOSPC, f"Error writing bytes to file. Detail: [errno 28] {ENOSPC}")


# ----------------------------------------------------------------------------- what the cases need

def tiny_checkpoint(tmp: Path) -> Path:
    """A tiny untrained MQAN saved as `deca train` saves its best model (vocabulary inside)."""
    from tests.mqan.test_model import tiny_model
    from mqan.checkpoint import save_checkpoint

    return save_checkpoint(tmp / "model" / "model.pt", tiny_model())


def processed(tmp: Path) -> Path:
    """A processed folder with tiny SST train and validation splits, and a vocabulary next to it."""
    from tests.eval.helpers import row, write_split

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


# ----------------------------------------------------------------------------- bad input: `deca predict`

ASK = ["--context", "a fine film .", "--question", "is this review negative or positive?"]


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


def checkpoint_is_a_directory(tmp: Path) -> str:
    """`deca predict --checkpoint DIR` says DIR is a directory, not a checkpoint file."""
    (tmp / "run").mkdir()
    return refused(["predict", "--checkpoint", str(tmp / "run"), *ASK], "a directory, not a checkpoint file")


def null_id_is_the_line_number(tmp: Path) -> str:
    """A request with `"id": null` is answered with its line number as id, not "None"."""
    path = write_requests(tmp, b'{"context": "a", "question": "b", "id": null}\n{"context": "c", "question": "d"}\n')
    code, out, err = run_cli(["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--input", str(path),
                              "--device", "cpu", "--no-progress"])
    must(code == 0, f"exit {code}: {error_line(err)}")
    ids = [json.loads(line)["id"] for line in out.splitlines()]
    must(ids == ["1", "2"], f"the ids are {ids}, not the line numbers ['1', '2']")
    return 'answered with ids "1", "2" (the line numbers)'


def predict_help_names_no_vocab_path(tmp: Path) -> str:
    """`deca predict --help` no longer sends the user to data.vocab_path (the checkpoint carries it)."""
    code, out, err = run_cli(["predict", "--help"])
    must(code == 0 and "--checkpoint" in out, f"--help failed: {error_line(out + err)}")
    must("data.vocab_path" not in out, "the help still says data.vocab_path")
    return "the help does not mention data.vocab_path"


def score_predictions_not_utf8(tmp: Path) -> str:
    """`deca score --predictions FILE` with a Latin-1 byte names the file, the line and the fix."""
    preds = tmp / "sst.jsonl"
    preds.write_bytes(b'{"id": "validation-0", "prediction": "positive"}\n'
                      b'{"id": "validation-1", "prediction": "n\xe9gative"}\n')
    return refused(["score", "--task", "sst", "--split", "validation", "--predictions", str(preds),
                    "--data", str(processed(tmp)), "--no-progress"], f"{preds}:2: not valid UTF-8")


# ----------------------------------------------------------------------------- bad input: tasks and params

def validate_refuses(item: str, expect: str) -> Callable[[Path], str]:
    """`deca validate --set ITEM` fails naming the --set once, with `expect`."""
    def check(tmp: Path) -> str:
        return refused(["validate", "--params", str(ROOT / "params.yaml"), "--dvc-yaml", "none", "--set", item],
                       f"--set {item}: ", expect, once=True)
    return check


def command_names_the_set(command: str, item: str, expect: str) -> Callable[[Path], str]:
    """`deca COMMAND --set ITEM` (on tiny data and a tiny checkpoint) refuses it once, naming the --set."""
    def check(tmp: Path) -> str:
        data = ["--set", f"data.processed_dir={processed(tmp)}", "--set", f"data.vocab_path={tmp / 'vocab.txt'}"]
        extra = {"prepare": ["--out", str(tmp / "out")],
                 "evaluate": ["--checkpoint", str(tiny_checkpoint(tmp)), "--out", str(tmp / "eval"), "--no-mlflow"],
                 "train": ["--set", "train.tasks=[sst]"]}[command]
        line = refused([command, *data, *extra, "--set", item], expect, once=True)
        must(f"--set {item.split('=')[0]}=" in line, f"the message does not name --set {item}: {line}")
        return line
    return check


def custom_task_file_empty(tmp: Path) -> str:
    """An empty file of a custom task is named as the user's own (no `deca download`), before Beam runs."""
    import yaml

    empty = tmp / "dev.jsonl"
    empty.write_text("", encoding="utf-8")
    spec = {"metric": "nf1", "fields": {"context": "passage"},
            "files": {"train": str(FIXTURES / "custom" / "qa.train.jsonl"), "validation": str(empty)}}
    params = tmp / "params.yaml"
    params.write_text(yaml.safe_dump({"custom_tasks": {"minqa": spec}}), encoding="utf-8")
    try:
        line = refused(["prepare", "--params", str(params), "--tasks", "minqa", "--out", str(tmp / "out")],
                       "the validation file of your custom task 'minqa'")
    finally:
        forget_custom_tasks()
    must("download" not in line, f"the message sends the user to a download: {line}")
    must(not (tmp / "out").exists(), "the output folder was created")
    return line


def forget_custom_tasks() -> None:
    """Declare the default params' custom tasks (none), as a new command would."""
    from deca.config import Params
    from deca.custom_tasks import declare

    declare(Params())


# ----------------------------------------------------------------------------- bad input: what the user is told

def stages_count_custom_tasks(tmp: Path) -> str:
    """`python -m infra.stages --write` counts a custom task among the tasks it reports."""
    import shutil

    import yaml

    from deca.registry import all_tasks
    from infra import stages

    spec = {"metric": "nf1", "fields": {"context": "passage"},
            "files": {"train": "tests/fixtures/custom/qa.train.jsonl",
                      "validation": "tests/fixtures/custom/qa.validation.jsonl"}}
    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    (tmp / "params.yaml").write_text(yaml.safe_dump({**raw, "custom_tasks": {"minqa": spec}}), encoding="utf-8")
    shutil.copy(ROOT / "dvc.yaml", tmp / "dvc.yaml")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = stages.main(["--write", "--dvc-yaml", str(tmp / "dvc.yaml"), "--params", str(tmp / "params.yaml")])
        registered = len(all_tasks())  # the module tasks and minqa
    finally:
        forget_custom_tasks()
    must(code == 0, f"`python -m infra.stages --write` exit {code}: {out.getvalue().strip()[-200:]}")
    must(f"{registered} tasks (1 custom), " in out.getvalue(),
         f"expected '{registered} tasks (1 custom)', got: {out.getvalue().strip()}")
    return out.getvalue().strip().splitlines()[-1]


def compare_mlflow_custom_and_same_names(tmp: Path) -> str:
    """`deca compare --mlflow` shows a custom task's column and tells two runs named `pipeline` apart."""
    import yaml
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from deca.registry import get_task

    uri = f"sqlite:///{tmp / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(tmp / "artifacts").as_uri())
    ids = []
    for start, (sst, minqa) in zip([1767261600000, 1767348000000], [(80.0, 41.0), (82.0, 47.5)]):
        run_id = client.create_run(exp, run_name="pipeline", start_time=start).info.run_id
        client.log_batch(run_id, metrics=[Metric(k, v, 1000, 9) for k, v in {
            f"validation/sst/{get_task('sst').metric}": sst, "validation/sst/headline": sst,
            "validation/minqa/nf1": minqa, "validation/minqa/headline": minqa,
            "validation/decascore": sst}.items()])
        ids.append(run_id)
    (tmp / "params.yaml").write_text(yaml.safe_dump({"custom_tasks": {"minqa": {
        "metric": "nf1", "files": {"validation": "dev.jsonl"}}}}), encoding="utf-8")
    try:
        code, out, err = run_cli(["compare", "--mlflow", "decanlp", "--tracking-uri", uri, "--json"])
    finally:
        forget_custom_tasks()
    must(code == 0, f"exit {code}: {error_line(err)}")
    data = json.loads(out)
    labels = [r["label"] for r in data["rows"]]
    must("minqa" in data["tasks"], f"no column for the custom task: {data['tasks']}")
    must(len(set(labels)) == 2 and all(i[:8] in label for i, label in zip(ids, labels)),
         f"two runs named 'pipeline' are not told apart: {labels}")
    return f"columns {data['tasks']}; rows {labels}"


def resumed_progress(tmp: Path) -> str:
    """The progress line of a run resumed at iteration 100 starts there, not at 0."""
    from train.progress import ProgressBar

    line = ProgressBar(None, total=160, stream=io.StringIO(), start=100).line(elapsed=20.0)
    must(line.startswith("train: iteration 100/160") and "resuming from 100" in line,
         f"a run resumed at iteration 100 shows: {line}")
    return line


# ----------------------------------------------------------------------------- faults

def disk_full_prepare(tmp: Path) -> str:
    """`deca prepare` on a disk that fills while Beam writes: names the file, leaves no empty folder."""
    import pyarrow.parquet as pq

    params = tmp / "params.yaml"
    params.write_text("prepare:\n  rows_per_shard: 3\n", encoding="utf-8")
    out = tmp / "processed"
    with patched(pq, "write_table", full_disk):
        line = refused(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                        "--out", str(out), "--params", str(params)],
                       f"{out / 'sst' / 'validation' / 'part-00000.parquet'}: {ENOSPC}")
    must(not empty_dirs(tmp), f"empty folders left: {empty_dirs(tmp)}")
    return line


def disk_full_evaluate(tmp: Path) -> str:
    """`deca evaluate --out DIR` on a full disk: names the file under DIR, leaves no empty folder."""
    from deca import io as deca_io

    data, out, model = processed(tmp), tmp / "eval" / "run", tiny_checkpoint(tmp)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["evaluate", "--checkpoint", str(model), "--tasks", "sst", "--out", str(out),
                        "--set", f"data.processed_dir={data}", "--device", "cpu", "--no-mlflow", "--no-progress"],
                       ENOSPC, f"{out}/")
    must(not empty_dirs(tmp), f"empty folders left: {empty_dirs(tmp)}")
    return line


def disk_full_predict(tmp: Path) -> str:
    """`deca predict --output DIR/x.jsonl` on a full disk: names the file, creates no DIR."""
    from deca import io as deca_io

    out, model = tmp / "answers" / "x.jsonl", tiny_checkpoint(tmp)
    with patched(deca_io, "_fsync", full_disk):
        line = refused(["predict", "--checkpoint", str(model), *ASK, "--device", "cpu",
                        "--output", str(out)], f"{out}: {ENOSPC}")
    must(not (tmp / "answers").exists(), f"{tmp / 'answers'} was left behind")
    return line


def cuda_without_a_gpu(tmp: Path) -> str:
    """`deca predict --device cuda` where CUDA is not available says so, with the fix."""
    import torch

    with patched(torch.cuda, "is_available", lambda: False):
        return predict_refuses(["--device", "cuda"], "--device cuda: CUDA is not available on this machine")(tmp)


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


def refused_experiment_puts_params_back(tmp: Path) -> str:
    """`dvc exp run -S train.strategy=zigzag -S train.iterations=-5`: its validate stage refuses the values and
    puts params.yaml back as in the baseline commit (the slow DVC test runs the experiment itself)."""
    import shutil

    from dvc.utils.hydra import apply_overrides

    def git(*args: str) -> str:
        env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
        return subprocess.run(["git", *args], cwd=tmp, env=env, check=True, capture_output=True, text=True).stdout

    shutil.copy(ROOT / "params.yaml", tmp / "params.yaml")
    git("init", "-q")
    git("add", "params.yaml")
    git("commit", "-q", "-m", "baseline")
    baseline = (tmp / "params.yaml").read_bytes()
    apply_overrides(str(tmp / "params.yaml"), ["train.strategy=zigzag", "train.iterations=-5"])
    with environment(DVC_EXP_BASELINE_REV=git("rev-parse", "HEAD").strip(), DVC_ROOT=str(tmp)):
        line = refused(["validate", "--dvc-yaml", "none", "--stamp", "params.valid"],
                       "unknown strategy 'zigzag'", "train.iterations = -5: must be >= 1", "put back as in")
    must((tmp / "params.yaml").read_bytes() == baseline, "params.yaml is not as in the baseline")
    must(not (tmp / "params.valid").exists(), "the validate stamp was written")
    return line


# ----------------------------------------------------------------------------- load

def long_context_refused(chars: int, in_file: bool) -> Callable[[Path], str]:
    """`deca predict` with a context of `chars` characters (--context, or a line of --input) is refused before
    its model loads, in well under a second."""
    def check(tmp: Path) -> str:
        context = "word " * (chars // 5)
        if in_file:
            path = write_requests(tmp, json.dumps({"context": context, "question": "what?"}).encode() + b"\n")
            asked, expect = ["--input", str(path)], f"{path}:1: context: at most 20,000 characters, got {chars:,}"
        else:
            asked, expect = ["--context", context, "--question", "what?"], f"--context: at most 20,000 " \
                                                                          f"characters, got {chars:,}"
        start = time.perf_counter()
        with model_not_loaded():
            line = refused(["predict", "--checkpoint", str(tiny_checkpoint(tmp)), "--device", "cpu", *asked], expect)
        seconds = time.perf_counter() - start
        must(seconds < 5, f"refused, but only after {seconds:.1f} s")
        return f"{line} ({seconds:.2f} s)"
    return check


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


def post(app, body: bytes) -> tuple[int, dict]:
    """(status, JSON body) of `POST /predict` with `body`, through the ASGI app in this process; an error that
    escapes the app is a 500, as uvicorn would answer."""
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
    try:
        asyncio.run(app(scope, receive, send))
    except Exception as exc:  # noqa: BLE001
        return 500, {"error": f"{type(exc).__name__}: {exc}"[:200]}
    status = next((m["status"] for m in sent if m["type"] == "http.response.start"), 500)
    data = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(data or b"{}")


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


def small_call_between_pieces(tmp: Path) -> str:
    """The batching queue of `deca serve` answers a one-sentence call between the pieces of a large call (the
    model takes 50 ms a batch here); bench/serve_fairness.py measures it on a real server."""
    from infer.serve.engine import Batcher

    order: list[list[str]] = []

    def answer(batch: list[dict]) -> list[dict]:
        time.sleep(0.05)
        order.append([r["id"] for r in batch])
        return [{"id": r["id"]} for r in batch]

    def row(rid: str, tokens: int) -> dict:
        return {"id": rid, "context_tokens": ["word"] * tokens, "question_tokens": ["why", "?"], "answer_tokens": []}

    async def go() -> tuple[int, int]:
        batcher = Batcher(answer, max_batch=4, max_wait_ms=1, batch_tokens=1000)
        try:
            large = asyncio.ensure_future(batcher.submit([row(f"long{i}", 100) for i in range(12)]))
            await asyncio.sleep(0.02)
            await batcher.submit([row("small", 3)])
            return len(order), len(await large)
        finally:
            await batcher.stop()

    pieces_before, large = asyncio.run(go())
    must(large == 12, f"the large call got {large} of 12 answers")
    must(pieces_before <= 2, f"the small call waited for {pieces_before} pieces of the large one: {order}")
    return f"answered with piece {pieces_before} of {len(order)} of the large call"


# ----------------------------------------------------------------------------- the cases

def issue12(case: Callable[[Path], object]) -> Callable[[Path], str]:
    """A case of bench/bad_inputs.py: handled when it raises a DecaError (its message is the evidence)."""
    def check(tmp: Path) -> str:
        from deca.errors import DecaError

        try:
            case(tmp)
        except DecaError as exc:
            return str(exc)
        raise NotHandled("accepted")
    return check


ISSUE12_FAULTS = {"truncated checkpoint", "checkpoint loaded with other word vectors",
                  "vector source package not installed"}
NESTED = b"[" * 100_000 + b"]" * 100_000
MB = 1_000_000
T, W, U = "issue 24: traceback", "issue 24: weak message", "issue 24: untruth"


def bad_input_cases() -> list[Case]:
    """The bad inputs: files, options, params and requests a user may give, and what they are told."""
    g, p = "bad input", predict_refuses
    return [
        *(Case(g, name, "issue 12", issue12(fn)) for name, fn in bad_inputs.CASES if name not in ISSUE12_FAULTS),
        Case(g, "deca predict --input: non-UTF-8 bytes", T, p([], "requests.jsonl:1: not UTF-8 text",
                                                              b'{"context": "caf\xe9", "question": "b"}\n')),
        Case(g, "deca predict --input: JSON nested 100,000 deep", T, p([], "requests.jsonl:1: JSON nested too deeply",
                                                                        NESTED + b"\n")),
        Case(g, "deca score --predictions: non-UTF-8 bytes", T, score_predictions_not_utf8),
        Case(g, "deca ls 'zzz*'", T, lambda tmp: refused(["ls", "zzz*"], "task pattern 'zzz*' matches no task")),
        Case(g, "train.tasks glob matching nothing (deca train)", T, lambda tmp: refused(
            ["train", "--set", "train.tasks=[zzz*]"], "task pattern 'zzz*' matches no task")),
        Case(g, "deca predict --max-answer-length -1", T, p(["--max-answer-length", "-1"],
                                                            "--max-answer-length must be at least 1")),
        Case(g, "deca predict --max-answer-length 0", T, p(["--max-answer-length", "0"],
                                                           "--max-answer-length must be at least 1")),
        Case(g, "deca predict --device foo", T, p(["--device", "foo"], "--device foo: not a device")),
        Case(g, "deca serve: a JSON body nested 100,000 deep", T, server_refuses(lambda: NESTED, 400,
                                                                                 "nested too deeply")),
        Case(g, "deca validate --set train.strategy=zigzag", "issue 24: pre-flight",
             validate_refuses("train.strategy=zigzag", "unknown strategy 'zigzag'")),
        Case(g, "deca validate --set 'train.tasks=[nosuchtask]'", "issue 24: pre-flight",
             validate_refuses("train.tasks=[nosuchtask]", "unknown task 'nosuchtask'")),
        Case(g, "deca validate --set 'train.tasks=[zzz*]'", "issue 24: pre-flight",
             validate_refuses("train.tasks=[zzz*]", "task pattern 'zzz*' matches no task")),
        Case(g, "deca prepare --set 'data.tasks=[nosuchtask]': once, naming --set", W,
             command_names_the_set("prepare", "data.tasks=[nosuchtask]", "unknown task 'nosuchtask'")),
        Case(g, "deca evaluate --set 'evaluate.tasks=[nosuchtask]': once, naming --set", W,
             command_names_the_set("evaluate", "evaluate.tasks=[nosuchtask]", "unknown task 'nosuchtask'")),
        Case(g, "deca train --set train.strategy=zigzag: once, naming --set", W,
             command_names_the_set("train", "train.strategy=zigzag", "unknown strategy 'zigzag'")),
        Case(g, "custom task: an empty file is the user's own, not a download", W, custom_task_file_empty),
        Case(g, "deca predict --checkpoint DIR", W, checkpoint_is_a_directory),
        Case(g, "deca predict --context '' (the server's 422)", W, p(["--context", ""], "--context: must contain "
                                                                                         "some text")),
        Case(g, "deca predict --question '  ' (the server's 422)", W, p(["--question", "  "], "--question: must "
                                                                                              "contain some text")),
        Case(g, "deca predict --input: an empty context", W, p([], "requests.jsonl:1: context: must contain some "
                                                                "text", b'{"context": "", "question": "b"}\n')),
        Case(g, "deca serve: an empty context (422)", W, server_refuses(
            lambda: b'{"context": " ", "question": "b"}', 422, "context: must contain some text")),
        Case(g, 'deca predict --input: "id": null is the line number', W, null_id_is_the_line_number),
        Case(g, "deca ls SST suggests sst", W, lambda tmp: refused(["ls", "SST"], "(did you mean sst?)")),
        Case(g, "infra.stages --write counts custom tasks", U, stages_count_custom_tasks),
        Case(g, "deca compare --mlflow: custom task columns, same-named runs told apart", U,
             compare_mlflow_custom_and_same_names),
        Case(g, "deca predict --help does not say data.vocab_path", U, predict_help_names_no_vocab_path),
    ]


def fault_cases() -> list[Case]:
    """The faults: a full disk, a kill, a missing GPU or package, a bad checkpoint, a refused experiment."""
    g = "fault"
    return [
        *(Case(g, name, "issue 12", issue12(fn)) for name, fn in bad_inputs.CASES if name in ISSUE12_FAULTS),
        Case(g, "disk full during deca prepare (simulated ENOSPC)", T, disk_full_prepare),
        Case(g, "disk full during deca evaluate (simulated ENOSPC)", T, disk_full_evaluate),
        Case(g, "disk full during deca predict --output (simulated ENOSPC)", T, disk_full_predict),
        Case(g, "disk full on a real 1 MB tmpfs: deca predict --output, deca score --metrics-out", T,
             test="tests/bench/test_faults.py::test_a_real_full_disk_is_named_and_leaves_nothing"),
        Case(g, "disk full on a real 1 MB tmpfs: deca prepare --out", T,
             test="tests/bench/test_faults.py::test_a_real_full_disk_during_prepare_is_named_and_leaves_nothing"),
        Case(g, "deca predict --device cuda without a GPU", T, cuda_without_a_gpu),
        Case(g, "dvc exp run -S train.strategy=zigzag: validate puts params.yaml back", "issue 24: data loss",
             refused_experiment_puts_params_back),
        Case(g, "dvc exp run -S zigzag -S iterations=-5: checkpoints, params.yaml, dvc.lock unchanged",
             "issue 24: data loss", test="tests/test_dvc_pipeline.py::test_a_refused_experiment_changes_nothing"),
        Case(g, "SIGKILL of a pytest run holding the MLflow server leaves no process", "issue 24: orphans",
             test="tests/infra/test_processes.py::test_a_killed_test_run_leaves_no_mlflow_server"),
        Case(g, "SIGKILL of a training driver leaves no local Ray", "earlier",
             test="tests/infra/test_processes.py::test_a_killed_driver_leaves_no_local_ray"),
        Case(g, "Ctrl-C during deca prepare: exit 130, no staging folder", "earlier",
             test="tests/deca/test_cli_errors.py::test_ctrl_c_during_prepare"),
        Case(g, "dvc repro killed after a checkpoint continues from it", "earlier",
             test="tests/test_dvc_pipeline.py::test_repro_killed_after_a_checkpoint_continues_from_it"),
        Case(g, "a resumed run's progress starts at the resumed iteration", U, resumed_progress),
    ]


def load_cases() -> list[Case]:
    """Load: the work of one request is bounded, and small calls are not starved by a large one."""
    g, u = "load", "issue 24: unbounded work"
    return [
        Case(g, "deca predict --context of 120,000 characters: refused before the model loads", u,
             long_context_refused(120_000, in_file=False)),
        Case(g, "deca predict --input with a 1 MB context: refused before the model loads", u,
             long_context_refused(MB, in_file=True)),
        Case(g, "deca serve: a 1 MB context (422, the model not asked)", u, server_refuses(
            lambda: json.dumps({"context": "x" * MB, "question": "q?"}).encode(), 422, "at most 20,000 characters")),
        Case(g, "deca serve: a body over the byte limit (413)", u, server_refuses(
            lambda: b"[" + b'{"context": "a", "question": "b"},' * 300_000 + b"]", 413, "are accepted")),
        Case(g, "deca serve: a small call is answered between the pieces of a large one", u,
             small_call_between_pieces),
        Case(g, "deca serve under load: one-sentence calls answered in seconds while 64 contexts of 20,000 "
                "characters are decoded", u,
             test="tests/bench/test_faults.py::test_small_calls_are_answered_while_long_contexts_are_decoded"),
    ]


def all_cases() -> list[Case]:
    """Every case, grouped: bad input, fault, load."""
    return [*bad_input_cases(), *fault_cases(), *load_cases()]


# ----------------------------------------------------------------------------- running them

def run_case(case: Case) -> Verdict:
    """The verdict of a fast case, run in a temporary folder that is also the working directory."""
    start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="deca-fault-") as tmp, contextlib.chdir(tmp):
        try:
            detail, handled = case.check(Path(tmp)), True
        except NotHandled as exc:
            detail, handled = str(exc), False
        except Exception as exc:  # noqa: BLE001 - a crash of the code under test is a verdict too
            detail, handled = f"{type(exc).__name__} escaped: {exc}", False
        for path in {str(Path(tmp).resolve()), tmp}:
            detail = detail.replace(path, "TMP")
    return Verdict(case, handled, " ".join(str(detail).split()), time.perf_counter() - start)


def run_slow(cases: list[Case]) -> list[Verdict]:
    """The verdicts of slow cases: one pytest run of their tests; a case is handled when its test (every
    parameter of it) passed."""
    nodes = sorted({c.test for c in cases})
    with tempfile.TemporaryDirectory(prefix="deca-fault-") as tmp:
        report = Path(tmp) / "junit.xml"
        start = time.perf_counter()
        print(f"running {len(nodes)} slow tests ...", file=sys.stderr, flush=True)
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}",
                        *nodes], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        took = time.perf_counter() - start
        results = ET.parse(report).getroot().iter("testcase") if report.exists() else []
        outcomes = [(tc.get("classname", ""), tc.get("name", ""), float(tc.get("time") or 0), outcome(tc))
                    for tc in results]
    return [slow_verdict(c, outcomes, took) for c in cases]


def outcome(testcase: ET.Element) -> str:
    """passed, failed, error, skipped or xfailed (expected to fail: a known case not handled) of a JUnit test."""
    for child in testcase:
        if child.tag == "skipped":
            return "xfailed" if "xfail" in (child.get("type") or "") else "skipped"
        if child.tag in ("failure", "error"):
            return "failed" if child.tag == "failure" else "error"
    return "passed"


def slow_verdict(case: Case, outcomes: list[tuple[str, str, float, str]], took: float) -> Verdict:
    """The verdict of one slow case from the outcomes (classname, name, seconds, outcome) of the pytest run."""
    path, func = case.test.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    mine = [(n, s, o) for cls, n, s, o in outcomes if cls == module and (n == func or n.startswith(func + "["))]
    if not mine:
        return Verdict(case, False, f"{case.test}: not run (no such test?)", took)
    bad = [f"{n} {o}" for n, _, o in mine if o != "passed"]
    seconds = sum(s for _, s, _ in mine)
    detail = f"{case.test} " + (f"not passed: {', '.join(bad)}" if bad else f"passed ({seconds:.0f} s)")
    return Verdict(case, not bad, detail, seconds)


def table(verdicts: list[Verdict]) -> str:
    """The verdicts as Markdown, one table per group, and the counts."""
    lines = []
    for group in GROUPS:
        mine = [v for v in verdicts if v.case.group == group]
        handled = sum(v.handled is True for v in mine)
        lines += ["", f"### {group}: {handled} of {len(mine)} handled", "",
                  "| case | found | verdict | evidence |", "|---|---|---|---|"]
        for v in mine:
            outcome = {True: "handled", False: "**NOT HANDLED**", None: "not run (slow)"}[v.handled]
            kind = " (slow)" if v.case.slow and v.handled is not None else ""
            evidence = v.detail[:150] + ("..." if len(v.detail) > 150 else "")
            lines.append("| " + " | ".join(cell.replace("|", "/") for cell in (
                v.case.name, v.case.origin, outcome + kind, evidence)) + " |")
    run = [v for v in verdicts if v.handled is not None]
    skipped = len(verdicts) - len(run)
    lines += ["", f"{sum(v.handled is True for v in run)} of {len(run)} handled"
              + (f" ({skipped} slow cases not run: --fast or --skip)" if skipped else "")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the cases, print the table; 1 if a case run was not handled."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fast", action="store_true", help="the fast cases only (seconds); list the slow ones")
    parser.add_argument("--skip", action="append", default=[], metavar="TEXT",
                        help="do not run the slow tests whose node contains TEXT (repeatable), e.g. test_dvc_pipeline")
    args = parser.parse_args(argv)
    cases = all_cases()
    verdicts = {id(c): run_case(c) for c in cases if not c.slow}
    slow = [c for c in cases if c.slow and not args.fast and not any(text in c.test for text in args.skip)]
    verdicts.update({id(c): Verdict(c, None, c.test) for c in cases if c.slow and c not in slow})
    if slow:
        verdicts.update({id(v.case): v for v in run_slow(slow)})
    ordered = [verdicts[id(c)] for c in cases]
    print(table(ordered))
    return 1 if any(v.handled is False for v in ordered) else 0


if __name__ == "__main__":
    sys.exit(main())
