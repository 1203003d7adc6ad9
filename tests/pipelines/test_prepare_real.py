"""The prepare pipeline on the real corpora in ../shared/corpora (Table 1 counts through Beam to Parquet)."""
from __future__ import annotations

import json

import pytest

from deca.config import PrepareConfig
from deca.schema import read_split
from pipelines import prepare

pytestmark = [pytest.mark.slow, pytest.mark.corpora]


def test_real_sst_counts_through_the_pipeline(shared_corpora, tmp_path):
    cfg = PrepareConfig()
    prepare.run(prepare.make_job(["sst"], shared_corpora, tmp_path, cfg, from_mirror=True), cfg)
    counts = {split: read_split(tmp_path, "sst", split, columns=["id"]).num_rows
              for split in ("train", "validation", "test")}
    assert counts == {"train": 6920, "validation": 872, "test": 1821}
    stats = json.loads((tmp_path / "sst" / "stats.json").read_text())
    assert {s: e["examples"] for s, e in stats["splits"].items()} == counts
    ids = read_split(tmp_path, "sst", "train", columns=["id"]).column("id").to_pylist()
    assert len(set(ids)) == len(ids)
    assert len(list((tmp_path / "sst" / "train").glob("part-*.parquet"))) == 2  # 5,000 rows per shard
