"""Where a trained model came from: the lineage of a training run, collected when it starts.

`collect` gathers, from the project and the run's params (no MLflow, no model code):

- ``commit``/``dirty``: the git commit of the project and whether tracked files differ from it, the outputs
  the pipeline itself rewrites (dvc.lock and every output it records) left out: `make run` rewrites them
  before `train` starts, and they are not what the run reads;
- ``dvc_lock``: the sha256 of dvc.lock, the digest of its train stage's inputs (``train_inputs``: its deps and
  params as dvc.lock records them) and, per processed task the run reads, the chain DVC recorded:
  ``prepare@<task>``'s output digest and its raw corpus inputs (``data/raw/...``, with their md5);
- ``data``: a sha256 per processed task/split the run reads (``<task>/<split>``: file names and contents of its
  Parquet shards), what the run trained and validated on, whatever dvc.lock says;
- ``project``: the project's folder (a reproduction in another checkout finds the run's paths there again);
- ``params_sha256`` (the resolved params as canonical JSON), ``vocab_sha256``, ``vectors`` (fingerprint of each
  pre-trained source, given by the caller), ``seed``, and ``versions`` (python, torch, ray, mlflow).

`tags` flattens it into ``lineage.*`` MLflow tags (train/tracking.py logs them on the run, and
infer/registry.py copies them onto a registered version); `chain` reads them back as the printed
chain model -> run -> commit -> params -> processed data -> raw corpus checksums (`deca lineage`).
"""
from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from deca.schema import split_dir

PREFIX = "lineage."
SPLITS = ("train", "validation")
PACKAGES = ("torch", "ray", "mlflow")


def digest(value: Any) -> str:
    """sha256 of a JSON-able value, as canonical JSON (sorted keys)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def git(project: Path, *args: str) -> str | None:
    """The output of `git -C project *args`, or None when it fails (not a work tree, an unknown commit)."""
    done = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def pipeline_outputs(project: Path) -> list[str]:
    """dvc.lock and every output its stages record (paths relative to the project): what `dvc repro` rewrites."""
    path = project / "dvc.lock"
    stages = (yaml.safe_load(path.read_bytes()) or {}).get("stages") or {} if path.is_file() else {}
    return ["dvc.lock", *sorted({o["path"] for stage in stages.values() for o in stage.get("outs") or []})]


def code_changes(project: Path, commit: str = "HEAD") -> list[str] | None:
    """Tracked files of the work tree that differ from `commit`, the pipeline's outputs and .gitignore files
    (DVC adds its outputs to them) left out; None when `commit` is not in the repository (or `project` is no
    git work tree)."""
    excluded = [f":(exclude){p}" for p in pipeline_outputs(project)] + [":(exclude,glob)**/.gitignore"]
    out = git(project, "diff", "--name-only", commit, "--", ".", *excluded)
    return None if out is None else out.splitlines()


def git_state(project: Path) -> dict[str, Any]:
    """{commit, dirty} of the git work tree at `project` ({commit: None} outside one); dirty: code or inputs
    differ from the commit (`code_changes`)."""
    commit = git(project, "rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "dirty": None}
    return {"commit": commit, "dirty": bool(code_changes(project, commit))}


def folder_sha256(folder: Path) -> str | None:
    """sha256 over the names and contents of a folder's files (sorted); None when it has none."""
    files = sorted(p for p in folder.rglob("*") if p.is_file()) if folder.is_dir() else []
    if not files:
        return None
    h = hashlib.sha256()
    for path in files:
        h.update(path.relative_to(folder).as_posix().encode() + b"\0")
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
    return h.hexdigest()


def data_digests(processed_dir: str | Path, tasks: Sequence[str]) -> dict[str, str | None]:
    """{"<task>/<split>": sha256 of its processed shards} for the splits a training run reads."""
    return {f"{t}/{s}": folder_sha256(split_dir(processed_dir, t, s)) for t in tasks for s in SPLITS}


def code_dirs(project: Path) -> tuple[str, ...]:
    """The project's package folders ("deca/", "mqan/", ...): its top-level folders with an __init__.py."""
    return tuple(sorted(f"{p.parent.name}/" for p in project.glob("*/__init__.py")))


def is_data(path: str, code: tuple[str, ...]) -> bool:
    """Whether a dvc.lock dependency is data (not the project's code: a .py file or a file under `code`)."""
    return not path.endswith(".py") and not path.startswith(code)


def dvc_lock_state(project: Path, tasks: Sequence[str]) -> dict[str, Any] | None:
    """What dvc.lock records of the run's inputs (see the module docstring); None without a dvc.lock."""
    path = project / "dvc.lock"
    if not path.is_file():
        return None
    raw, code = path.read_bytes(), code_dirs(project)
    stages = (yaml.safe_load(raw) or {}).get("stages") or {}
    train = stages.get("train") or {}
    out: dict[str, Any] = {"sha256": hashlib.sha256(raw).hexdigest(),
                           "train_inputs": digest({"deps": train.get("deps"), "params": train.get("params")})
                           if train else None,
                           "train_data": {d["path"]: d.get("md5") for d in train.get("deps") or []
                                          if is_data(d["path"], code)},
                           "tasks": {}}
    for task in tasks:
        stage = stages.get(f"prepare@{task.replace('.', '_')}")
        if stage:
            out["tasks"][task] = {"processed": {o["path"]: o.get("md5") for o in stage.get("outs") or []},
                                  "raw": {d["path"]: d.get("md5") for d in stage.get("deps") or []
                                          if is_data(d["path"], code)}}
    return out


def versions() -> dict[str, str | None]:
    """Versions of python and of the packages a run's results depend on."""
    found: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def collect(project: str | Path, params: Mapping[str, Any], tasks: Sequence[str], vocab_sha256: str,
            vectors: Mapping[str, str]) -> dict[str, Any]:
    """The lineage record of a training run with resolved `params` (a dict) reading `tasks`."""
    project = Path(project)
    data = params.get("data") or {}
    return {**git_state(project), "project": str(project.resolve()), "dvc_lock": dvc_lock_state(project, tasks),
            "data": data_digests(data.get("processed_dir") or "data/processed", tasks),
            "params_sha256": digest(dict(params)), "vocab_sha256": vocab_sha256, "vectors": dict(vectors),
            "seed": (params.get("train") or {}).get("seed"), "versions": versions()}


def tags(record: Mapping[str, Any]) -> dict[str, str]:
    """The record as ``lineage.*`` tags (strings; None as "none")."""
    lock = record.get("dvc_lock") or {}
    flat = {"commit": record.get("commit"), "dirty": record.get("dirty"), "params.sha256": record.get("params_sha256"),
            "vocab.sha256": record.get("vocab_sha256"), "seed": record.get("seed"),
            "dvc_lock.sha256": lock.get("sha256"), "dvc_lock.train_inputs": lock.get("train_inputs")}
    flat.update({f"vectors.{k}": v for k, v in (record.get("vectors") or {}).items()})
    flat.update({f"data.{k}": v for k, v in (record.get("data") or {}).items()})
    flat.update({f"version.{k}": v for k, v in (record.get("versions") or {}).items()})
    return {PREFIX + k: "none" if v is None else str(v).lower() if isinstance(v, bool) else str(v)
            for k, v in flat.items()}


def _short(value: Any) -> str:
    return "none" if value is None else str(value)[:16] if len(str(value)) > 40 else str(value)


def data_links(record: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(lines, missing links) from the processed data a run read to the raw corpus checksums in dvc.lock."""
    lines, missing = [], []
    tasks = ((record.get("dvc_lock") or {}).get("tasks")) or {}
    for name, sha in sorted((record.get("data") or {}).items()):
        lines.append(f"data     {name}: sha256 {_short(sha)}")
        if sha is None:
            missing.append(f"data {name}: no processed shards were found when the run started")
    for task in sorted({n.rsplit("/", 1)[0] for n in record.get("data") or {}}):
        stage = tasks.get(task)
        if not stage:
            missing.append(f"raw corpus of {task}: no prepare stage of it in the run's dvc.lock")
            continue
        outs = ", ".join(f"{p} md5 {_short(m)}" for p, m in sorted(stage["processed"].items())) or "none"
        lines.append(f"prepared {task}: {outs}")
        for path, md5 in sorted(stage["raw"].items()):
            lines.append(f"raw      {task}: {path} md5 {_short(md5)}")
        if not stage["raw"]:
            missing.append(f"raw corpus of {task}: its prepare stage records no raw input")
    return lines, missing


def chain(record: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
    """(lines, missing links) of a run's lineage record: commit -> params -> processed data -> raw corpora."""
    if not record:
        return [], ["lineage: the run recorded none (trained before lineage was recorded, or not by `deca train`)"]
    lines, missing = [], []
    commit, dirty = record.get("commit"), record.get("dirty")
    lines.append(f"commit   {_short(commit)}" + ("" if commit is None else " (dirty: uncommitted changes)" if dirty
                                                 else " (clean)"))
    if commit is None:
        missing.append("commit: the project was not a git work tree when the run started")
    elif dirty:
        missing.append("commit: the tree was dirty, so the commit does not identify the code exactly")
    vectors = ", ".join(f"{k} {_short(v)}" for k, v in sorted((record.get("vectors") or {}).items())) or "none"
    lines += [f"params   sha256 {_short(record.get('params_sha256'))}, seed {record.get('seed')}",
              f"vocab    sha256 {_short(record.get('vocab_sha256'))}; pre-trained vectors: {vectors}",
              "versions " + ", ".join(f"{k} {v}" for k, v in sorted((record.get("versions") or {}).items()))]
    lock = record.get("dvc_lock")
    if lock is None:
        missing.append("dvc.lock: there was none in the project when the run started")
    else:
        lines.append(f"dvc.lock sha256 {_short(lock.get('sha256'))}, train stage inputs "
                     f"{_short(lock.get('train_inputs'))}")
        if lock.get("train_inputs") is None:
            missing.append("dvc.lock: it has no train stage (the run was not trained by `dvc repro`)")
    more, gaps = data_links(record)
    return lines + more, missing + gaps
