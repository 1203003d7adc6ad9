"""The output folder of `deca contamination` (pipelines/contamination.py), read by `deca evaluate`.

``<dir>/contamination.json``: the task x task matrix; ``<dir>/contaminated_ids.json``: per evaluation
split (``<task>/<split>``) the ids of the examples that overlap training data (``any``), by field and by
training task. Here so that readers need not import the Beam job.
"""
from __future__ import annotations

import json
from pathlib import Path

from deca.errors import DataError

MATRIX_FILE = "contamination.json"
IDS_FILE = "contaminated_ids.json"
FORMAT = 1


def split_key(task: str, split: str) -> str:
    """How an evaluation split is named in the output: ``<task>/<split>``."""
    return f"{task}/{split}"


def load_flagged(out: str | Path) -> dict[str, set[str]]:
    """``<task>/<split>`` -> the ids flagged in a contamination output folder (its contaminated_ids.json);
    a DataError naming the file when it is not one."""
    path = Path(out) / IDS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT:
            raise ValueError(f"format {doc.get('format')!r}, expected {FORMAT}")
        return {key: set(v["any"]) for key, v in doc["splits"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(path, f"not a contamination output ({type(exc).__name__}: {exc})",
                        fix="rerun `deca contamination` (or `dvc repro contamination`)") from None
