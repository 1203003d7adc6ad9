"""Bad inputs of issue 24: files, options, params and requests a user may give, and what they are told: one
line naming the file, line, option or key and the fix (exit code not 0, no traceback), and nothing written."""
from __future__ import annotations

import contextlib
import io
import json
import shutil

import pytest

from tests.faults.tools import (ASK, FIXTURES, NESTED, ROOT, T, U, W, case, error_line, forget_custom_tasks,
                                predict_refuses, processed, refused, run_cli, server_refuses, tiny_checkpoint,
                                validate_refuses, write_requests)

G = "bad input"
PREDICT = [
    case(G, "deca predict --input: non-UTF-8 bytes", T, [], "requests.jsonl:1: not UTF-8 text",
         b'{"context": "caf\xe9", "question": "b"}\n'),
    case(G, "deca predict --input: JSON nested 100,000 deep", T, [], "requests.jsonl:1: JSON nested too deeply",
         NESTED + b"\n"),
    case(G, "deca predict --max-answer-length -1", T, ["--max-answer-length", "-1"],
         "--max-answer-length must be at least 1", None),
    case(G, "deca predict --max-answer-length 0", T, ["--max-answer-length", "0"],
         "--max-answer-length must be at least 1", None),
    case(G, "deca predict --device foo", T, ["--device", "foo"], "--device foo: not a device", None),
    case(G, "deca predict --context '' (the server's 422)", W, ["--context", ""],
         "--context: must contain some text", None),
    case(G, "deca predict --question '  ' (the server's 422)", W, ["--question", "  "],
         "--question: must contain some text", None),
    case(G, "deca predict --input: an empty context", W, [], "requests.jsonl:1: context: must contain some text",
         b'{"context": "", "question": "b"}\n'),
]


@pytest.mark.parametrize("args, expect, content", PREDICT)
def test_deca_predict_refuses(tmp_path, observed, args, expect, content):
    observed(predict_refuses(tmp_path, args, expect, content))


@pytest.mark.parametrize("body, status, expect", [
    case(G, "deca serve: a JSON body nested 100,000 deep", T, NESTED, 400, "nested too deeply"),
    case(G, "deca serve: an empty context (422)", W, b'{"context": " ", "question": "b"}', 422,
         "context: must contain some text"),
])
def test_deca_serve_refuses(observed, body, status, expect):
    observed(server_refuses(body, status, expect))


@pytest.mark.parametrize("argv, expect", [
    case(G, "deca ls 'zzz*'", T, ["ls", "zzz*"], "task pattern 'zzz*' matches no task"),
    case(G, "train.tasks glob matching nothing (deca train)", T, ["train", "--set", "train.tasks=[zzz*]"],
         "task pattern 'zzz*' matches no task"),
    case(G, "deca ls SST suggests sst", W, ["ls", "SST"], "(did you mean sst?)"),
])
def test_deca_refuses(observed, argv, expect):
    observed(refused(argv, expect))


@pytest.mark.parametrize("item, expect", [
    case(G, "deca validate --set train.strategy=zigzag", "issue 24: pre-flight", "train.strategy=zigzag",
         "unknown strategy 'zigzag'"),
    case(G, "deca validate --set 'train.tasks=[nosuchtask]'", "issue 24: pre-flight", "train.tasks=[nosuchtask]",
         "unknown task 'nosuchtask'"),
    case(G, "deca validate --set 'train.tasks=[zzz*]'", "issue 24: pre-flight", "train.tasks=[zzz*]",
         "task pattern 'zzz*' matches no task"),
])
def test_deca_validate_refuses_a_set(observed, item, expect):
    observed(validate_refuses(item, expect))


@pytest.mark.parametrize("command, item, expect", [
    case(G, "deca prepare --set 'data.tasks=[nosuchtask]': once, naming --set", W, "prepare",
         "data.tasks=[nosuchtask]", "unknown task 'nosuchtask'"),
    case(G, "deca evaluate --set 'evaluate.tasks=[nosuchtask]': once, naming --set", W, "evaluate",
         "evaluate.tasks=[nosuchtask]", "unknown task 'nosuchtask'"),
    case(G, "deca train --set train.strategy=zigzag: once, naming --set", W, "train", "train.strategy=zigzag",
         "unknown strategy 'zigzag'"),
])
def test_a_command_names_the_set_it_refuses(tmp_path, observed, command, item, expect):
    """`deca COMMAND --set ITEM` (on tiny data and a tiny checkpoint) refuses it once, naming the --set."""
    data = ["--set", f"data.processed_dir={processed(tmp_path)}", "--set", f"data.vocab_path={tmp_path / 'vocab.txt'}"]
    extra = {"prepare": ["--out", str(tmp_path / "out")],
             "evaluate": ["--checkpoint", str(tiny_checkpoint(tmp_path)), "--out", str(tmp_path / "eval"),
                          "--no-mlflow"],
             "train": ["--set", "train.tasks=[sst]"]}[command]
    line = refused([command, *data, *extra, "--set", item], expect, once=True)
    assert f"--set {item.split('=')[0]}=" in line, f"the message does not name --set {item}: {line}"
    observed(line)


@pytest.mark.fault(G, "deca score --predictions: non-UTF-8 bytes", T)
def test_score_predictions_not_utf8(tmp_path, observed):
    """`deca score --predictions FILE` with a Latin-1 byte names the file, the line and the fix."""
    preds = tmp_path / "sst.jsonl"
    preds.write_bytes(b'{"id": "validation-0", "prediction": "positive"}\n'
                      b'{"id": "validation-1", "prediction": "n\xe9gative"}\n')
    observed(refused(["score", "--task", "sst", "--split", "validation", "--predictions", str(preds),
                      "--data", str(processed(tmp_path)), "--no-progress"], f"{preds}:2: not valid UTF-8"))


@pytest.mark.fault(G, "custom task: an empty file is the user's own, not a download", W)
def test_an_empty_custom_task_file_is_the_user_s_own(tmp_path, observed):
    """An empty file of a custom task is named as the user's own (no `deca download`), before Beam runs."""
    import yaml

    empty = tmp_path / "dev.jsonl"
    empty.write_text("", encoding="utf-8")
    spec = {"metric": "nf1", "fields": {"context": "passage"},
            "files": {"train": str(FIXTURES / "custom" / "qa.train.jsonl"), "validation": str(empty)}}
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"custom_tasks": {"minqa": spec}}), encoding="utf-8")
    try:
        line = refused(["prepare", "--params", str(params), "--tasks", "minqa", "--out", str(tmp_path / "out")],
                       "the validation file of your custom task 'minqa'")
    finally:
        forget_custom_tasks()
    assert "download" not in line, f"the message sends the user to a download: {line}"
    assert not (tmp_path / "out").exists(), "the output folder was created"
    observed(line)


@pytest.mark.fault(G, "deca predict --checkpoint DIR", W)
def test_a_checkpoint_that_is_a_directory(tmp_path, observed):
    (tmp_path / "run").mkdir()
    observed(refused(["predict", "--checkpoint", str(tmp_path / "run"), *ASK], "a directory, not a checkpoint file"))


@pytest.mark.fault(G, 'deca predict --input: "id": null is the line number', W)
def test_a_null_id_is_the_line_number(tmp_path, observed):
    path = write_requests(tmp_path, b'{"context": "a", "question": "b", "id": null}\n'
                                    b'{"context": "c", "question": "d"}\n')
    code, out, err = run_cli(["predict", "--checkpoint", str(tiny_checkpoint(tmp_path)), "--input", str(path),
                              "--device", "cpu", "--no-progress"])
    assert code == 0, f"exit {code}: {error_line(err)}"
    ids = [json.loads(line)["id"] for line in out.splitlines()]
    assert ids == ["1", "2"], f"the ids are {ids}, not the line numbers ['1', '2']"
    observed('answered with ids "1", "2" (the line numbers)')


@pytest.mark.fault(G, "deca predict --help does not say data.vocab_path", U)
def test_predict_help_names_no_vocab_path(observed):
    """`deca predict --help` no longer sends the user to data.vocab_path (the checkpoint carries it)."""
    code, out, err = run_cli(["predict", "--help"])
    assert code == 0 and "--checkpoint" in out, f"--help failed: {error_line(out + err)}"
    assert "data.vocab_path" not in out, "the help still says data.vocab_path"
    observed("the help does not mention data.vocab_path")


@pytest.mark.fault(G, "infra.stages --write counts custom tasks", U)
def test_stages_count_custom_tasks(tmp_path, observed):
    """`python -m infra.stages --write` counts a custom task among the tasks it reports."""
    import yaml

    from deca.registry import all_tasks
    from infra import stages

    spec = {"metric": "nf1", "fields": {"context": "passage"},
            "files": {"train": "tests/fixtures/custom/qa.train.jsonl",
                      "validation": "tests/fixtures/custom/qa.validation.jsonl"}}
    raw = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**raw, "custom_tasks": {"minqa": spec}}), encoding="utf-8")
    shutil.copy(ROOT / "dvc.yaml", tmp_path / "dvc.yaml")
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = stages.main(["--write", "--dvc-yaml", str(tmp_path / "dvc.yaml"), "--params",
                                str(tmp_path / "params.yaml")])
        registered = len(all_tasks())  # the module tasks and minqa
    finally:
        forget_custom_tasks()
    assert code == 0, f"`python -m infra.stages --write` exit {code}: {out.getvalue().strip()[-200:]}"
    assert f"{registered} tasks (1 custom), " in out.getvalue(), \
        f"expected '{registered} tasks (1 custom)', got: {out.getvalue().strip()}"
    observed(out.getvalue().strip().splitlines()[-1])


@pytest.mark.fault(G, "deca compare --mlflow: custom task columns, same-named runs told apart", U)
def test_compare_mlflow_custom_task_and_same_names(tmp_path, observed):
    """`deca compare --mlflow` shows a custom task's column and tells two runs named `pipeline` apart."""
    import yaml
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    from deca.registry import get_task

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("decanlp", artifact_location=(tmp_path / "artifacts").as_uri())
    ids = []
    for start, (sst, minqa) in zip([1767261600000, 1767348000000], [(80.0, 41.0), (82.0, 47.5)]):
        run_id = client.create_run(exp, run_name="pipeline", start_time=start).info.run_id
        client.log_batch(run_id, metrics=[Metric(k, v, 1000, 9) for k, v in {
            f"validation/sst/{get_task('sst').metric}": sst, "validation/sst/headline": sst,
            "validation/minqa/nf1": minqa, "validation/minqa/headline": minqa,
            "validation/decascore": sst}.items()])
        ids.append(run_id)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({"custom_tasks": {"minqa": {
        "metric": "nf1", "files": {"validation": "dev.jsonl"}}}}), encoding="utf-8")
    try:
        code, out, err = run_cli(["compare", "--mlflow", "decanlp", "--tracking-uri", uri, "--json"])
    finally:
        forget_custom_tasks()
    assert code == 0, f"exit {code}: {error_line(err)}"
    data = json.loads(out)
    labels = [r["label"] for r in data["rows"]]
    assert "minqa" in data["tasks"], f"no column for the custom task: {data['tasks']}"
    assert len(set(labels)) == 2 and all(i[:8] in label for i, label in zip(ids, labels)), \
        f"two runs named 'pipeline' are not told apart: {labels}"
    observed(f"columns {data['tasks']}; rows {labels}")
