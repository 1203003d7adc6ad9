"""`deca predict` (infer/predict.py, infer/predict_cli.py) on the tiny model of test_evaluate.py."""
from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from deca.cli import main
from deca.schema import read_split
from tests.infer.test_evaluate import params_for, setup  # noqa: F401  (the module-scoped fixture)
from mqan.decode import SOURCES


@pytest.fixture
def params_file(setup, tmp_path):  # noqa: F811
    params = params_for(setup)
    doc = {"data": dataclasses.asdict(params.data), "evaluate": dataclasses.asdict(params.evaluate),
           "train": {"storage_dir": params.train.storage_dir}}
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc))
    return params, str(path)


def test_predict_equals_evaluate_and_explains_every_token(params_file, tmp_path, capsys):
    params, path = params_file
    assert main(["evaluate", "--params", path, "--tasks", "sst", "--no-progress", "--no-mlflow"]) == 0
    evaluated = {r["id"]: r["prediction"] for line in
                 open(f"{params.evaluate.predictions_dir}/sst.jsonl", encoding="utf-8")
                 for r in [json.loads(line)]}
    gold = read_split(params.data.processed_dir, "sst", "validation").to_pylist()
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps({"id": r["id"], "context": r["context"], "question": r["question"]}) + "\n"
                                for r in gold))
    out = tmp_path / "answers.jsonl"
    assert main(["predict", "--params", path, "--input", str(requests), "--output", str(out), "--no-progress"]) == 0
    answers = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert {a["id"]: a["answer"] for a in answers} == evaluated  # same text preparation, same decoding
    steps = [s for a in answers for s in a["tokens"]]
    assert steps and all(s["source"] in SOURCES for s in steps)
    assert all(sum(s["weights"].values()) == pytest.approx(1.0, abs=1e-5) for s in steps)
    assert all(0.0 < s["probability"] <= 1.0 + 1e-6 for s in steps)

    assert main(["predict", "--params", path, "--context", gold[0]["context"], "--question", gold[0]["question"]]) == 0
    (line,) = capsys.readouterr().out.splitlines()[-1:]
    assert json.loads(line)["answer"] == evaluated[gold[0]["id"]]


def test_bad_requests_are_refused_naming_the_line(params_file, tmp_path, capsys):
    _, path = params_file
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"context": "a", "question": "b"}\nnot json\n')
    assert main(["predict", "--params", path, "--input", str(bad)]) == 1
    assert f"{bad}:2: not valid JSON" in capsys.readouterr().err
    bad.write_text('{"context": "a", "question": "b", "id": 1}\n{"context": "c", "question": "d", "id": "1"}\n')
    assert main(["predict", "--params", path, "--input", str(bad)]) == 1
    assert "id '1' given twice" in capsys.readouterr().err
    bad.write_text("\n")
    assert main(["predict", "--params", path, "--input", str(bad)]) == 1
    assert "no requests in it" in capsys.readouterr().err
    assert main(["predict", "--params", path, "--input", str(tmp_path / "missing.jsonl")]) == 1
    assert "requests file not found" in capsys.readouterr().err
    assert main(["predict", "--params", path, "--context", "a"]) == 1
    assert "--context and --question go together" in capsys.readouterr().err
    assert main(["predict", "--params", path, "--context", "a", "--question", "b", "--input", str(bad)]) == 1
    assert "either --context and --question, or --input" in capsys.readouterr().err


def test_the_checkpoint_alone_is_enough(params_file, setup, tmp_path, capsys):  # noqa: F811
    import torch

    from deca.errors import DataError
    from mqan.checkpoint import load_model

    _, path = params_file
    ask = ["--context", "a fine film .", "--question", "is this review negative or positive?"]
    assert main(["predict", "--params", path, *ask]) == 0
    with_vocab = capsys.readouterr().out
    assert main(["predict", "--params", path, "--set", f"data.vocab_path={tmp_path / 'gone.txt'}", *ask]) == 0
    assert capsys.readouterr().out == with_vocab  # the vocabulary came from the checkpoint

    older = tmp_path / "format2.pt"  # a checkpoint written before the vocabulary was stored in it
    payload = torch.load(setup[3] / "best" / "model.pt", weights_only=True)
    del payload["vocab_tokens"]
    torch.save({**payload, "format": "deca-mqan/2"}, older)
    with pytest.raises(DataError, match="does not carry its vocabulary"):
        load_model(older)
    model, vocab, _ = load_model(older, setup[2])  # with the vocabulary file it was trained with
    assert vocab.fingerprint == payload["vocab_fingerprint"]


@pytest.mark.parametrize("content, message", [
    (b'{"context": "caf\xe9", "question": "b"}\n', "bad.jsonl:1: not UTF-8 text (byte 16"),
    (b"[" * 100_000 + b"]" * 100_000 + b"\n", "bad.jsonl:1: JSON nested too deeply"),
    (b'{"context": "a", "question": "b"}\n{"context": "' + b"x" * 20_001 + b'", "question": "q"}\n',
     "bad.jsonl:2: context: at most 20,000 characters, got 20,001"),
    (b'{"context": " ", "question": "b"}\n', "bad.jsonl:1: context: must contain some text"),
    (b'{"context": "a", "question": ""}\n', "bad.jsonl:1: question: must contain some text"),
    (b'{"context": "a", "question": "b", "id": [1]}\n', "bad.jsonl:1: id: must be a string or an integer"),
    (b'{"question": "b"}\n', "bad.jsonl:1: context: this field is required"),
    (b'{"context": "a", "question": "b"}\n{"context": "ab\\ud800", "question": "b"}\n',
     "bad.jsonl:2: context: a lone surrogate \\ud800 at character 3, not text"),
    (b'{"context": "a", "question": "b", "id": "\\udfff"}\n', "bad.jsonl:1: id: a lone surrogate \\udfff"),
])
def test_every_bad_request_is_one_line_naming_the_line_and_field(params_file, tmp_path, capsys, content, message):
    _, path = params_file
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(content)
    assert main(["predict", "--params", path, "--input", str(bad)]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize("args, message", [
    (["--max-answer-length", "0"], "--max-answer-length must be at least 1 (decoding steps), got 0"),
    (["--max-answer-length", "-1"], "--max-answer-length must be at least 1"),
    (["--device", "foo"], "--device foo: not a device; use auto, cpu, cuda or cuda:N"),
    (["--device", "cpu:1"], "--device cpu:1: not a device"),
    (["--max-chars", "0"], "--max-chars must be at least 1"),
    (["--context", "x" * 101, "--max-chars", "100"], "--context: at most 100 characters, got 101"),
    (["--context", "   "], "--context: must contain some text"),
    (["--question", "caf\udce9?"], "--question: a lone surrogate \\udce9 at character 4, not text"),
])
def test_bad_options_are_one_line(params_file, capsys, args, message):
    _, path = params_file
    base = {"--context": "a fine film .", "--question": "positive or negative?"}
    for option, value in zip(args[::2], args[1::2]):
        base[option] = value
    assert main(["predict", "--params", path, *[x for kv in base.items() for x in kv]]) == 1
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_cuda_without_a_gpu_is_named_as_such(params_file, capsys, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    _, path = params_file
    assert main(["predict", "--params", path, "--context", "a", "--question", "b", "--device", "cuda"]) == 1
    assert "--device cuda: CUDA is not available on this machine; use --device cpu (or auto)" in capsys.readouterr().err


def test_a_null_id_is_the_line_number(params_file, tmp_path, capsys):
    _, path = params_file
    requests = tmp_path / "r.jsonl"
    requests.write_text('{"context": "a", "question": "b", "id": null}\n{"context": "c", "question": "d"}\n')
    assert main(["predict", "--params", path, "--input", str(requests)]) == 0
    assert [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()] == ["1", "2"]
