"""deca/lineage.py: what a run records of where it came from, and the chain printed from it."""
from __future__ import annotations

import subprocess

import yaml

from deca.lineage import chain, code_changes, code_dirs, collect, data_digests, dvc_lock_state, git_state, tags
from tests.conftest import ROOT

LOCK = {"schema": "2.0", "stages": {
    "train": {"cmd": "deca train", "deps": [{"path": "data/processed", "md5": "aa.dir"},
                                            {"path": "train/driver.py", "md5": "cc"}],
              "params": {"params.yaml": {"train.seed": 1}}},
    "prepare@sst": {"deps": [{"path": "pipelines/rows.py", "md5": "dd"}, {"path": "data/raw/sst", "md5": "ee.dir"}],
                    "outs": [{"path": "data/processed/sst", "md5": "ff.dir"}]},
    "evaluate": {"outs": [{"path": "eval/metrics.json", "md5": "11"}, {"path": "eval/plots", "md5": "22.dir"}]}}}


def project(tmp_path, lock=True):
    """A git project with a dvc.lock and processed sst train/validation shards (woz.en has no data)."""
    for split in ("train", "validation"):
        d = tmp_path / "data" / "processed" / "sst" / split
        d.mkdir(parents=True)
        (d / "part-00000.parquet").write_bytes(f"rows of {split}".encode())
    if lock:
        (tmp_path / "dvc.lock").write_text(yaml.safe_dump(LOCK), encoding="utf-8")
    (tmp_path / "toolkit").mkdir()
    (tmp_path / "toolkit" / "__init__.py").write_text("")
    (tmp_path / "toolkit" / "model.py").write_text("DIM = 1\n")
    (tmp_path / "eval" / "plots").mkdir(parents=True)
    (tmp_path / "eval" / "metrics.json").write_text("{}")
    (tmp_path / "eval" / "plots" / "loss.csv").write_text("1\n")
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    return tmp_path


def params(root):
    return {"data": {"processed_dir": str(root / "data" / "processed")}, "train": {"seed": 7}}


def test_a_record_names_commit_data_digests_dvc_lock_and_versions(tmp_path):
    root = project(tmp_path)
    record = collect(root, params(root), ["sst", "woz.en"], "v" * 64, {"word_vectors": "f" * 64})
    assert len(record["commit"]) == 40 and record["dirty"] is False
    assert record["seed"] == 7 and record["vocab_sha256"] == "v" * 64
    assert set(record["data"]) == {"sst/train", "sst/validation", "woz.en/train", "woz.en/validation"}
    assert record["data"]["woz.en/train"] is None and len(record["data"]["sst/train"]) == 64
    lock = record["dvc_lock"]
    assert lock["train_data"] == {"data/processed": "aa.dir"}  # code deps are not data
    assert lock["tasks"]["sst"] == {"processed": {"data/processed/sst": "ff.dir"}, "raw": {"data/raw/sst": "ee.dir"}}
    assert {"torch", "ray", "mlflow", "python"} <= set(record["versions"])
    flat = tags(record)
    assert flat["lineage.dirty"] == "false" and flat["lineage.data.woz.en/train"] == "none"
    assert flat["lineage.vectors.word_vectors"] == "f" * 64 and flat["lineage.seed"] == "7"


def test_digests_change_with_the_data_and_the_tree_turns_dirty(tmp_path):
    root = project(tmp_path)
    before = data_digests(root / "data" / "processed", ["sst"])
    (root / "data" / "processed" / "sst" / "train" / "part-00000.parquet").write_bytes(b"other rows")
    after = data_digests(root / "data" / "processed", ["sst"])
    assert before["sst/train"] != after["sst/train"] and before["sst/validation"] == after["sst/validation"]
    assert git_state(root)["dirty"] is False  # processed data is the pipeline's output: compared by digest
    (root / "toolkit" / "model.py").write_text("DIM = 2\n")
    assert git_state(root)["dirty"] is True
    assert git_state(tmp_path / "nowhere") == {"commit": None, "dirty": None}


def test_the_chain_reaches_the_raw_corpus_and_names_missing_links(tmp_path):
    root = project(tmp_path)
    lines, missing = chain(collect(root, params(root), ["sst"], "v" * 64, {}))
    text = "\n".join(lines)
    assert "raw      sst: data/raw/sst md5 ee.dir" in text and "prepared sst: data/processed/sst md5 ff.dir" in text
    assert missing == []
    lines, missing = chain(collect(root, params(root), ["sst", "woz.en"], "v" * 64, {}))
    assert any("data woz.en/train" in m for m in missing)
    assert any("raw corpus of woz.en: no prepare stage" in m for m in missing)
    (root / "dvc.lock").unlink()
    _, missing = chain(collect(root, params(root), ["sst"], "v" * 64, {}))
    assert any(m.startswith("dvc.lock: there was none") for m in missing)
    assert not any("commit: the tree was dirty" in m for m in missing)  # dvc.lock is the pipeline's own output
    assert chain(None)[1][0].startswith("lineage: the run recorded none")


def test_the_outputs_the_pipeline_rewrites_leave_the_tree_clean_and_code_does_not(tmp_path):
    """`make run` rewrites dvc.lock and the evaluate stage's tracked outputs before `train` starts: the run's
    tree is still clean (and code_changes against its commit lists nothing); a code file is not an output."""
    root = project(tmp_path)
    commit = git_state(root)["commit"]
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["train"]["deps"][0]["md5"] = "rerun.dir"
    (root / "dvc.lock").write_text(yaml.safe_dump(lock), encoding="utf-8")
    (root / "eval" / "metrics.json").write_text('{"decascore": 1}')
    (root / "eval" / "plots" / "loss.csv").write_text("2\n")
    assert git_state(root) == {"commit": commit, "dirty": False} and code_changes(root, commit) == []
    (root / "data" / ".gitignore").write_text("/processed\n")  # DVC lists its outputs there; committed with them
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(root), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "results"],
                   check=True)
    assert code_changes(root, commit) == []
    (root / "toolkit" / "model.py").write_text("DIM = 3\n")
    assert git_state(root)["dirty"] is True and code_changes(root, commit) == ["toolkit/model.py"]
    assert code_changes(root, "0" * 40) is None


def test_every_package_folder_of_the_project_is_code_not_data(tmp_path):
    assert {"mqan/", "infer/", "deca/", "train/", "bench/"} <= set(code_dirs(ROOT)) and "tests/" in code_dirs(ROOT)
    root = project(tmp_path)
    lock = yaml.safe_load((root / "dvc.lock").read_text())
    lock["stages"]["train"]["deps"].append({"path": "toolkit/vocab.txt", "md5": "cc"})
    (root / "dvc.lock").write_text(yaml.safe_dump(lock), encoding="utf-8")
    assert dvc_lock_state(root, ["sst"])["train_data"] == {"data/processed": "aa.dir"}
