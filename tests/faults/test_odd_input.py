"""Odd text and options of issue 34: lone surrogates in every text path, JSON nested 100,000 deep in
`deca score`, a tracking URI that is not MLflow, a reader that goes away, a missing --params file, a bad
--set, an unreachable Dask scheduler. Each must be one line (file:line, option or URI), not a traceback."""
from __future__ import annotations

import contextlib
import io
import socket
import time

import pytest

from tests.faults.tools import (FIXTURES, NESTED, case, environment, forget_custom_tasks, predict_refuses, processed,
                                refused, run_cli, validate_refuses, web_server)

G, TEXT, SMALL = "bad input", "issue 34: odd text", "issue 34: smaller"
SURROGATE = b'{"context": "a", "question": "b"}\n{"context": "ab\\ud800", "question": "b"}\n'


@pytest.mark.parametrize("args, expect, content", [
    case(G, "deca predict --input: a lone surrogate in a context", TEXT, [],
         "requests.jsonl:2: context: a lone surrogate \\ud800", SURROGATE),
    case(G, "deca predict --question with a lone surrogate", TEXT, ["--question", "caf\udce9?"],
         "--question: a lone surrogate \\udce9", None),
])
def test_deca_predict_refuses_a_lone_surrogate(tmp_path, observed, args, expect, content):
    observed(predict_refuses(tmp_path, args, expect, content))


@pytest.mark.parametrize("line, expect", [
    case(G, "deca score --predictions: a lone surrogate", TEXT,
         b'{"id": "validation-1", "prediction": "neg\\ud800"}', "a lone surrogate \\ud800"),
    case(G, "deca score --predictions: JSON nested 100,000 deep", TEXT,
         b'{"id": "validation-1", "prediction": ' + NESTED + b"}", "JSON nested too deeply"),
])
def test_deca_score_refuses_a_line(tmp_path, observed, line, expect):
    """`deca score --predictions FILE` whose second line is `line`: refused naming FILE:2 and `expect`."""
    preds = tmp_path / "sst.jsonl"
    preds.write_bytes(b'{"id": "validation-0", "prediction": "positive"}\n' + line + b"\n")
    observed(refused(["score", "--task", "sst", "--split", "validation", "--predictions", str(preds),
                      "--data", str(processed(tmp_path)), "--no-progress"], f"{preds}:2", expect))


@pytest.mark.fault(G, "deca prepare: a lone surrogate in a custom-task record", TEXT)
def test_a_lone_surrogate_in_a_custom_task_record(tmp_path, observed):
    """`deca prepare` of a custom task whose record holds a lone surrogate: file:line, before Beam, no output."""
    import yaml

    path = tmp_path / "dev.jsonl"
    good = '{"passage": "a b", "question": "q?", "answer": "a"}'
    path.write_text(good + "\n" + good.replace("a b", "a \\ud800 b") + "\n", encoding="utf-8")
    spec = {"metric": "nf1", "fields": {"context": "passage"}, "files": {"validation": str(path)}}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"custom_tasks": {"minqa": spec}, "data": {
        "raw_dir": str(tmp_path / "raw"), "processed_dir": str(tmp_path / "out")}}), encoding="utf-8")
    try:
        line = refused(["prepare", "--params", str(params), "--tasks", "minqa"],
                       f"{path}:2: field 'passage': a lone surrogate \\ud800")
    finally:
        forget_custom_tasks()
    assert not (tmp_path / "out" / "minqa").exists(), "an output folder was left"
    observed(line)


@pytest.mark.fault(G, "MLFLOW_TRACKING_URI naming a web server that is not MLflow (deca compare)", TEXT)
def test_a_tracking_uri_that_is_not_mlflow(observed):
    with web_server() as uri, environment(MLFLOW_TRACKING_URI=uri):
        observed(refused(["compare", "--mlflow", "decanlp"], f"{uri} answers, but not as an MLflow tracking server"))


class ClosedPipe(io.StringIO):
    """Standard output whose reader went away (`deca ls | head -1` after the first line)."""

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self) -> None:
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.fault(G, "deca ls | head -1: a reader that goes away", SMALL)
def test_a_reader_that_goes_away(observed):
    """`deca ls` writing to a closed pipe ends quietly: exit 141 (as `cat` would), nothing on stderr."""
    from deca.cli import main

    err = io.StringIO()
    with contextlib.redirect_stdout(ClosedPipe()), contextlib.redirect_stderr(err):
        try:
            code = main(["ls"])
        except BrokenPipeError:
            code = "BrokenPipeError escaped"
    assert code == 141 and not err.getvalue(), f"exit {code}, stderr: {err.getvalue().strip()[-200:]!r}"
    observed("exit 141, nothing on stderr")


@pytest.mark.fault(G, "deca validate --params missing.yaml: only an error", SMALL)
def test_a_missing_params_file_is_only_an_error(tmp_path, observed):
    """`deca validate --params missing.yaml` is only an error (it once printed "valid (83 settings)" first)."""
    code, out, err = run_cli(["validate", "--params", str(tmp_path / "missing.yaml")])
    assert "valid" not in out, f"it says {out.strip()!r} before its error"
    observed(refused(["validate", "--params", str(tmp_path / "missing.yaml")], "missing.yaml: no such params file"))


@pytest.mark.fault(G, "deca validate --set bogus.x=1 names --set, not params.yaml", SMALL)
def test_an_unknown_set_key_names_the_set(observed):
    observed(validate_refuses("bogus.x=1", "unknown key(s) 'bogus'"))


@pytest.mark.fault(G, "deca prepare on a Dask scheduler at a refused port: reported within 5 s", SMALL)
def test_a_refused_dask_port_is_reported_in_seconds(tmp_path, observed):
    """`deca prepare --runner=DaskRunner` with a scheduler address on which nothing listens: one line in 5 s."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    start = time.perf_counter()
    line = refused(["prepare", "--tasks", "sst", "--splits", "validation", "--mirror", str(FIXTURES / "corpora"),
                    "--out", str(tmp_path / "out"), "--runner=DaskRunner",
                    f"--dask_client_address=tcp://127.0.0.1:{port}"], "cannot reach the Dask scheduler")
    seconds = time.perf_counter() - start
    assert seconds < 5, f"reported after {seconds:.1f} s"
    observed(f"{line} ({seconds:.1f} s)")
