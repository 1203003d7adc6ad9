"""The run folder: where a training run keeps what inference and later runs read.

A run is a folder ``<train.storage_dir>/<name>/`` holding its record ``deca_run.json`` (MLflow run,
resolved params, whether it finished), Ray Train's checkpoints and the best model (``best/model.pt``).
This module is the contract between training (which writes the folder) and inference (which reads it):
it knows paths and the record, nothing of the model or of Ray, so `deca evaluate` / `predict` / `serve`
can find a model without importing the training recipe.

"The latest run" (the default of predict, serve, evaluate, register and `train --resume`) is the run whose
record was written last, leaving out reproductions (`deca reproduce`: their record names the run they
reproduce, REPRODUCTION) until adopted (`deca reproduce DIR --adopt`); a skipped one is named on stderr.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from deca.errors import ConfigError, DataError
from deca.io import write_json

RUN_FILE = "deca_run.json"
BEST = Path("best") / "model.pt"
# A registered model version, as `deca predict/evaluate/serve --model`, `deca lineage` and `deca reproduce` take it.
MODEL_URI = re.compile(r"models:/(?P<name>[A-Za-z0-9][A-Za-z0-9_.-]*)(?:/(?P<version>\d+)|@(?P<alias>[A-Za-z0-9_-]+))")
URI_FORMS = "models:/<name>/<version> or models:/<name>@<alias>"
REPRODUCTION = "reproduction_of"  # in a reproduction's record: the MLflow run id it reproduces


def reproduction_of(run_file: Path) -> str | None:
    """The MLflow run a run folder reproduces (its record's REPRODUCTION), None for any other run."""
    try:
        info = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return info.get(REPRODUCTION) if isinstance(info, dict) else None


def runs_newest_first(storage: str | Path) -> list[Path]:
    """The records of the runs under `storage`, newest first, reproductions left out (each named on stderr)."""
    found = []
    for record in sorted(Path(storage).glob(f"*/{RUN_FILE}"), key=lambda p: p.stat().st_mtime, reverse=True):
        of = reproduction_of(record)
        if of is None:
            found.append(record)
        else:
            print(f"note: skipped run {record.parent.name} under {storage}: a reproduction of run {of}; use "
                  f"--run {record.parent}, or `deca reproduce {record.parent} --adopt`", file=sys.stderr)
    return found


def adopt(folder: Path) -> None:
    """Make the reproduction in `folder` a run like any other (the latest run, when it is the newest)."""
    info = read_run_file(folder / RUN_FILE)
    if REPRODUCTION not in info:
        raise ConfigError(f"--adopt {folder}: not a reproduction (its {RUN_FILE} names no reproduced run); "
                          "it is a run like any other already")
    info["reproduced_from"] = info.pop(REPRODUCTION)
    write_json(folder / RUN_FILE, info)


def latest_run(storage: str | Path) -> Path:
    """The run folder under `storage` whose record was written last (a run's record is rewritten when it
    finishes), reproductions left out; ConfigError when there is none."""
    runs = runs_newest_first(storage)
    if not runs:
        raise ConfigError(f"no training run under {storage}: run `deca train` first, or name the run")
    return runs[0].parent


def latest_run_with_model(storage: str | Path) -> Path:
    """The latest run under `storage` that has a best model: later runs without one (a training that failed
    or was stopped before its first validation) are skipped, each named on stderr. The latest run when none has
    one (its error then says so)."""
    runs = runs_newest_first(storage)
    for record in runs:
        if best_model_path(record.parent).is_file():
            return record.parent
        print(f"note: skipping run {record.parent.name} under {storage}: it has no best model yet (it failed or "
              "stopped before its first validation)", file=sys.stderr)
    if not runs:
        raise ConfigError(f"no training run under {storage}: run `deca train` first, or name the run")
    return runs[0].parent


def run_folder(run: str | Path | None, storage: str | Path) -> Path:
    """The folder of run `run`: a run directory, or a run name under `storage`; the latest run when None.
    ConfigError when there is no such run."""
    if run is None:
        return latest_run(storage)
    for candidate in (Path(run), Path(storage) / str(run)):
        if (candidate / RUN_FILE).is_file() or (candidate / BEST).is_file():
            return candidate
    known = sorted(p.parent.name for p in Path(storage).glob(f"*/{RUN_FILE}"))
    raise ConfigError(f"--run {run}: no training run there (neither a run directory nor a run name under {storage})"
                      + (f"; runs: {', '.join(known)}" if known else ""))


def read_run_file(run_file: Path) -> dict[str, Any]:
    """A run's record (deca_run.json); a DataError names it when it cannot be read."""
    try:
        info = json.loads(run_file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(run_file, f"the run record cannot be read ({exc})",
                        fix="start the run over under another --run-name, or delete the run folder") from None
    if not isinstance(info, dict) or "mlflow_run_id" not in info:
        raise DataError(run_file, "not a run record (no mlflow_run_id)", fix="delete the run folder or start over")
    return info


def best_model_path(run_dir: str | Path) -> Path:
    """Where a run keeps its best model (what `deca evaluate` loads)."""
    return Path(run_dir) / BEST


def model_file(source: str | Path) -> Path:
    """The model file of `source`: a checkpoint file, or a run directory's best/model.pt."""
    path = Path(source)
    return best_model_path(path) if path.is_dir() else path


def resolve_checkpoint(run: str | None, checkpoint: str | None, storage_dir: str) -> tuple[Path, dict]:
    """(checkpoint file, the run's record from deca_run.json, or {} for a bare checkpoint file).

    `checkpoint` wins; else the run folder `run`; else the latest run under `storage_dir`."""
    if checkpoint:
        return Path(checkpoint), {}
    run_dir = Path(run) if run else latest_run_with_model(storage_dir)
    path = best_model_path(run_dir)
    if not path.exists():
        raise DataError(path, "the run has no best model",
                        fix="train until at least one validation (train.val_every) or pass --checkpoint FILE")
    info_file = run_dir / RUN_FILE
    return path, read_run_file(info_file) if info_file.exists() else {}


def add_model_arguments(parser, run_help: str = "a training run directory (default: the latest run)") -> None:
    """The three ways to name a model, one at a time: --run DIR, --checkpoint FILE, --model URI (the MLflow
    registry: infer/registry.py)."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--run", metavar="DIR", help=run_help)
    which.add_argument("--checkpoint", metavar="FILE", help="a model checkpoint file (mqan/checkpoint.py)")
    which.add_argument("--model", metavar="URI", help="a registered model: models:/<name>/<version> or "
                                                      "models:/<name>@<alias> (`deca register`)")
