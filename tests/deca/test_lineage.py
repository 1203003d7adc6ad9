"""deca/lineage.py: what a run records of where it came from, and the chain printed from it."""
from __future__ import annotations

import subprocess

import yaml

from deca.lineage import chain, collect, data_digests, git_state, tags

LOCK = {"schema": "2.0", "stages": {
    "train": {"cmd": "deca train", "deps": [{"path": "data/processed", "md5": "aa.dir"},
                                            {"path": "train/driver.py", "md5": "cc"}],
              "params": {"params.yaml": {"train.seed": 1}}},
    "prepare@sst": {"deps": [{"path": "pipelines/rows.py", "md5": "dd"}, {"path": "data/raw/sst", "md5": "ee.dir"}],
                    "outs": [{"path": "data/processed/sst", "md5": "ff.dir"}]}}}


def project(tmp_path, lock=True):
    """A git project with a dvc.lock and processed sst train/validation shards (woz.en has no data)."""
    for split in ("train", "validation"):
        d = tmp_path / "data" / "processed" / "sst" / split
        d.mkdir(parents=True)
        (d / "part-00000.parquet").write_bytes(f"rows of {split}".encode())
    if lock:
        (tmp_path / "dvc.lock").write_text(yaml.safe_dump(LOCK), encoding="utf-8")
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
    assert any("commit: the tree was dirty" in m for m in missing)  # dvc.lock was tracked: deleting it dirties
    assert chain(None)[1][0].startswith("lineage: the run recorded none")
