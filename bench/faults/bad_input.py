"""Bad inputs of issues 12 and 24: files, options, params and requests a user may give, and what they are
told. Issue 12's cases are bench/bad_inputs.py's (handled when they raise a DecaError); the others run
`deca` in this process."""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Callable

from bench import bad_inputs
from bench.faults.case import Case, NotHandled, must
from bench.faults.tools import (ASK, FIXTURES, ROOT, error_line, predict_refuses, processed, refused, run_cli,
                                server_refuses, tiny_checkpoint, write_requests)

NESTED = b"[" * 100_000 + b"]" * 100_000
# issue 12's cases that are faults, not bad inputs (bench/faults/fault.py)
ISSUE12_FAULTS = {"truncated checkpoint", "checkpoint loaded with other word vectors",
                  "vector source package not installed"}
T, W, U = "issue 24: traceback", "issue 24: weak message", "issue 24: untruth"


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




def cases() -> list[Case]:
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

