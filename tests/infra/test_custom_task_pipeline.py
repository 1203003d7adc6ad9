"""A custom JSON-lines task (params.yaml custom_tasks) through the whole DVC pipeline on a copy of the repository:
`python -m infra.stages --write` gives it a prepare stage, `dvc repro` prepares, trains on it next to SST,
evaluates and reports it; `deca score` and `deca compare` read it; a changed record reruns its stages only.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from tests.infra.dvc_repo import BIN, Repo, copy_worktree, ran_stages

pytestmark = [pytest.mark.slow, pytest.mark.first]

CUSTOM = {"minqa": {"metric": "nf1", "description": "short questions about one sentence (test fixture)",
                    "fields": {"context": "passage"},
                    "files": {"train": "tests/fixtures/custom/qa.train.jsonl",
                              "validation": "tests/fixtures/custom/qa.validation.jsonl"}}}
SETTINGS = {"data": {"tasks": ["sst", "minqa"]}, "prepare": {"vocab_tasks": ["sst", "minqa"]},
            "train": {"tasks": ["sst", "minqa"], "iterations": 30, "val_every": 15, "save_every": 15, "warmup": 10},
            "evaluate": {"tasks": ["sst", "minqa"]}, "custom_tasks": CUSTOM}


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Repo:
    path = tmp_path_factory.mktemp("custom-pipeline")
    copy_worktree(path)
    repo = Repo(path)
    repo.set_params(SETTINGS)
    repo.run(str(BIN / "python"), "-m", "infra.stages", "--write")
    repo.run("git", "init", "-q")
    repo.commit("a custom task")
    repo.first = repo.dvc("repro")
    return repo


def test_repro_prepares_trains_and_evaluates_the_custom_task(repo):
    assert {"prepare_minqa", "prepare@sst", "vocab", "train", "evaluate", "report"} <= set(ran_stages(repo.first))
    metrics = json.loads((repo.path / "eval" / "metrics.json").read_text())
    assert set(metrics["tasks"]) == {"sst", "minqa"}
    assert metrics["tasks"]["minqa"]["n"] == 4 and "nf1" in json.dumps(metrics["tasks"]["minqa"])
    lines = (repo.path / "eval" / "predictions" / "minqa.jsonl").read_text().splitlines()
    assert [json.loads(line)["id"] for line in lines] == ["v0", "v1", "v2", "v3"]
    assert "minqa" in (repo.path / "eval" / "report" / "report.md").read_text()
    vocab = (repo.path / "data" / "vocab.txt").read_text()
    assert "rehearses" not in vocab.split()  # validation words stay out of the vocabulary...
    assert "bicycle" in vocab.split()  # ...the custom task's training words are in it (prepare.vocab_tasks)


def test_score_and_compare_read_the_custom_task(repo):
    repo.run(str(BIN / "deca"), "score", "--tasks", "minqa", "--metrics-out", "scored.json", "--no-progress")
    scored = json.loads((repo.path / "scored.json").read_text())
    evaluated = json.loads((repo.path / "eval" / "metrics.json").read_text())
    same = {k: v for k, v in evaluated["tasks"]["minqa"].items() if k in scored["tasks"]["minqa"]}
    assert scored["tasks"]["minqa"] == same  # deca score agrees with deca evaluate
    compared = repo.run(str(BIN / "deca"), "compare", "--metrics", "eval/metrics.json", "--tasks", "minqa", "--json")
    assert "minqa" in compared.stdout


def test_a_changed_record_reruns_the_custom_task_and_what_follows(repo):
    path = repo.path / CUSTOM["minqa"]["files"]["validation"]
    records = [json.loads(line) for line in path.read_text().splitlines()]
    records[1]["answer"] = "oslo, norway"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    status = repo.dvc("status").stdout
    assert "prepare_minqa" in status and "prepare@sst" not in status
    bad = path.read_text() + '{"passage": "no question here"}\n'
    path.write_text(bad)
    failed = repo.dvc("repro", "prepare_minqa", check=False)
    assert failed.returncode != 0
    assert f"{CUSTOM['minqa']['files']['validation']}:5: record has no 'question' field" in failed.stdout + failed.stderr
    subprocess.run(["git", "checkout", "--", "."], cwd=repo.path, check=True)
