"""Prediction files for scoring tests; tiny processed splits (row, write_split) are tests/support.py's."""
from __future__ import annotations

import json
from pathlib import Path


def write_predictions(path: Path, predictions: dict[str, str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in predictions.items()),
                    encoding="utf-8")
    return path
