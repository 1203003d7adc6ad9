"""Which field of each flagged example a long-text (n-gram) match is in, and the matched texts, for the
contamination page: `deca contamination` counts by field the examples with any match and, apart, those with an
n-gram match in any field, so "context found whole" is not in its matrix. A text of >= n tokens is hashed only
by its n-grams, so a field match on such a text is an n-gram match; on a shorter one, the text found whole.

Reruns `deca contamination` with the record's command on the same processed data, refuses to go on when the
matrix differs from the record's, reads the token columns of the flagged examples, and writes the record's
`matches` section (the rest of the record is left as it is):

    python -m experiments.contamination_matches --processed checkpoints/readme-experiment/processed
"""
from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import date
from pathlib import Path

from bench import record as bench_record
from deca.schema import shards
from pipelines.contamination import FIELDS, read_shard
from pipelines.contamination_hashes import normalize

TOP = 3  # texts found whole kept per field, the most frequent
RECORD = bench_record.ROOT / "docs" / "results" / "records" / "contamination.json"


def token_texts(processed: Path, task: str, split: str, wanted: set[str]) -> dict[str, dict[str, list[str]]]:
    """id -> field -> its tokens as the job compares them (normalized), for the `wanted` ids."""
    out = {}
    for path in shards(processed, task, split):
        for rows in read_shard(str(path)):
            for i, ident in enumerate(rows["id"]):
                if str(ident) in wanted:
                    out[str(ident)] = {f: normalize(rows[f"{f}_tokens"][i]) for f in FIELDS}
    return out


def split_matches(by_field: dict[str, list[str]], texts: dict[str, dict[str, list[str]]], n: int,
                  top: int = TOP) -> dict:
    """One evaluation split: per field, the matched examples whose text has >= n tokens (an n-gram match; the
    rest were found whole), each n-gram-matched example's long matched texts, and per field the `top` texts
    found whole in the most examples, with their counts."""
    long = {f: [i for i in by_field[f] if len(texts[i][f]) >= n] for f in FIELDS}
    found = [{"id": i, "field": f, "text": " ".join(texts[i][f])}
             for i in by_field["ngram"] for f in FIELDS if i in long[f]]
    whole = {f: Counter(" ".join(texts[i][f]) for i in by_field[f] if len(texts[i][f]) < n) for f in FIELDS}
    return {"ngram_by_field": {f: len(v) for f, v in long.items()}, "ngram_texts": found,
            "whole_texts": {f: [list(kv) for kv in c.most_common(top)] for f, c in whole.items()}}


def matches(ids: dict, processed: Path, n: int) -> dict:
    """The `matches` section's splits from a contaminated_ids.json."""
    out = {}
    for key, split in ids["splits"].items():
        task, name = key.split("/")
        wanted = {i for f in FIELDS for i in split["by_field"][f]}
        out[key] = split_matches(split["by_field"], token_texts(processed, task, name, wanted), n)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--processed", type=Path, required=True, help="the processed data of the record's command")
    ap.add_argument("--record", type=Path, default=RECORD)
    args = ap.parse_args(argv)
    doc = json.loads(args.record.read_text(encoding="utf-8"))
    with tempfile.TemporaryDirectory() as tmp:
        command = doc["command"].replace("<main checkout>/checkpoints/readme-experiment/processed",
                                         str(args.processed)).replace("/tmp/contamination", f"{tmp}/out")
        words = shlex.split(command)
        words[0] = str(Path(sys.executable).parent / words[0])  # the deca of this environment
        load = bench_record.load()
        start = time.perf_counter()
        if subprocess.run(words, stdout=sys.stderr).returncode != 0:
            print(f"error: `{command}` failed (its message above); the record {args.record} is unchanged",
                  file=sys.stderr)
            return 1
        seconds = time.perf_counter() - start
        out = Path(tmp) / "out"
        if json.loads((out / "contamination.json").read_text(encoding="utf-8")) != doc["result"]:
            print("error: the rerun's matrix differs from the record's: not the same inputs", file=sys.stderr)
            return 1
        ids = json.loads((out / "contaminated_ids.json").read_text(encoding="utf-8"))
    doc["matches"] = {
        "source": "experiments/contamination_matches.py: the record's command rerun on the same processed data "
                  "(its contamination.json equal to `result`), the matched ids of its contaminated_ids.json, and "
                  "each matched text's length in the job's tokens (>= n: matched by an n-gram) and, per field, "
                  "the texts found whole in the most examples",
        "command": "python -m experiments.contamination_matches --processed <main checkout>/checkpoints/"
                   "readme-experiment/processed",
        "date": date.today().isoformat(), "commit": bench_record.commit(), "load_before": load,
        "process_seconds": round(seconds, 1),
        "splits": matches(ids, args.processed, doc["result"]["n"])}
    written = args.record.with_suffix(".json.tmp")  # whole or not at all: the record is replaced at once
    written.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    written.replace(args.record)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
