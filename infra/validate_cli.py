"""`deca validate`: check the configuration before running anything.

  deca validate                                   # params.yaml, and dvc.yaml against the code
  deca validate --overlay infra/params/glove.yaml # params.yaml with an overlay applied
  deca validate --set train.iterations=0          # any --set, as `deca train` would take it

Runs on params.yaml, with each --overlay and --set applied, every check that `deca prepare`, `deca
train` and `deca evaluate` run on params before they start (deca.checks.check_params): keys, types and
values; custom tasks; task names and patterns; prepare's task options; the strategy and its phases
against the budget (train/schedule.py); each task's metric; the vector sources (found, not converted).
Every problem is printed once, after where its value came from (``params.yaml:97``, an overlay's
``file:line``, ``--set KEY=VALUE``). Then checks that dvc.yaml's generated blocks match the registry and
the code (`python -m infra.stages --write` brings them up to date). Exit status 1 when anything is wrong.

The pipeline's first stage (dvc.yaml's `validate`) runs `deca validate --dvc-yaml none --stamp FILE`: the
stages that read params depend on FILE, so DVC runs it first and stops there on a bad value, before any
stage has touched an output (`dvc exp run -S train.strategy=zigzag` used to lose the trained model).
FILE's text never changes, so a params change reruns only the stages that read it. Inside `dvc exp run`
in the workspace, a refused params.yaml is put back as the experiment's baseline commit has it when the
refused values are all that differ from it (DVC wrote the `-S` values into it): a refused experiment
leaves the workspace as it was.
"""
from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path
from typing import Any, Iterator

from deca.checks import COMMANDS, checked_params, leaves
from deca.errors import ConfigError, DataError
from deca.io import write_text
from deca.params_args import add_params_arguments, parse_overrides
from deca.params_file import key_lines, load_params_file, parse_yaml
from infra import stages
from train.schedule import from_config

STAMP_TEXT = ("params.yaml passed `deca validate` (dvc.yaml's validate stage); the stages that read params "
              "depend on this file, so that they start only after that check\n")


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--overlay", action="append", default=[], metavar="FILE",
                        help="a params overlay to apply on top (infra/params/*.yaml; repeatable, in order)")
    parser.add_argument("--dvc-yaml", default="dvc.yaml", metavar="FILE",
                        help="the pipeline file to check (default: %(default)s; 'none' to skip)")
    parser.add_argument("--stamp", metavar="FILE",
                        help="write FILE when the params are valid (the validate stage of dvc.yaml); inside "
                             "`dvc exp run`, put back a params.yaml whose experiment values are refused")


def layers() -> dict[str, Any]:
    """The checks of other layers that `deca train`, `deca evaluate` and `deca register` run
    (deca.checks.layer_problems), and the allowed values of the keys whose lists those layers keep (`choices`:
    train.choices.allowed_values)."""
    from eval.api import check_metrics
    from eval.gate import check_config
    from train.choices import allowed_values

    return {"schedule": from_config, "metrics": check_metrics, "vectors": find_vectors, "gate": check_config,
            "choices": allowed_values()}


def find_vectors(source: str) -> None:
    """A vector source that `deca train` would not find fails here (DataError). A packaged source or a
    converted folder is opened (a second); a text file is only found: converting it is training's job."""
    if Path(source).is_file():
        return
    from mqan.vectors import open_source

    open_source(source)


def layered(overlays: list[str], sets: list[str]) -> tuple[dict[str, Any], dict[str, str]]:
    """The overrides of the overlays, then the --set values, and where each came from."""
    overrides: dict[str, Any] = {}
    origin: dict[str, str] = {}
    for path in overlays:
        from infra import overlay  # only with --overlay (not in the validate stage: infra/stages.py)

        values = overlay.load_overlay(path)  # its size and aliases bounded (deca.params_file.load_params_file)
        lines = key_lines(Path(path).read_text(encoding="utf-8"))
        for key, value in overlay.leaves(values):
            overrides[key] = value
            origin[key] = f"{path}:{lines[key]}" if key in lines else str(path)
    for item in sets:
        for key, value in parse_overrides([item]).items():
            overrides[key] = value
            origin[key] = f"--set {item}"
    return overrides, origin


def check(params_path: str, overlays: list[str], sets: list[str]) -> str:
    """A one-line summary of valid params; a ConfigError listing every problem otherwise."""

    overrides, origin = layered(overlays, sets)
    # task names resolve against the custom tasks too (declared)
    params, _ = checked_params(params_path, overrides, origin, COMMANDS, declared=True, **layers())
    where = " + ".join([str(params_path), *overlays] + (["--set"] if sets else []))
    return f"{where}: valid ({sum(1 for _ in leaves(params))} settings)"


def _flat(node: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from _flat(value, f"{prefix}{key}.")
    else:
        yield prefix[:-1], node


def undo_experiment(params_path: str, error: ConfigError) -> str | None:
    """Inside `dvc exp run` in the workspace (DVC sets DVC_EXP_BASELINE_REV and DVC_ROOT): put params.yaml
    back as the baseline commit has it when every value that differs from it is one `error` refused; what
    was done, or None (outside an experiment, or when params.yaml holds other changes: those are kept)."""
    rev, root = os.environ.get("DVC_EXP_BASELINE_REV"), os.environ.get("DVC_ROOT")
    refused = {k for p in getattr(error, "problems", ()) for k in p.involved()}
    if not (rev and root and refused) or Path(root).resolve() != Path.cwd().resolve():
        return None
    path = Path(params_path)
    shown = subprocess.run(["git", "show", f"{rev}:./{path.name}"], cwd=path.parent, capture_output=True)
    if shown.returncode != 0:
        return None
    before = shown.stdout.decode("utf-8")
    try:
        then, now = dict(_flat(parse_yaml(before, rev))), dict(_flat(load_params_file(path)))
    except ConfigError:
        return None
    missing = object()
    changed = {k for k in then.keys() | now.keys() if then.get(k, missing) != now.get(k, missing)}
    if not changed or not all(any(k == r or k.startswith(r + ".") or r.startswith(k + ".") for r in refused)
                              for k in changed):
        return None

    write_text(path, before)
    return (f"{path}: put back as in {rev[:7]}: the experiment's {', '.join(sorted(changed))} "
            f"{'was' if len(changed) == 1 else 'were'} refused, nothing ran")


def write_stamp(path: str) -> None:
    """The validate stage's output: its text never changes (the stages after it rerun only for what they read)."""

    stamp = Path(path)
    if not stamp.is_file() or stamp.read_text(encoding="utf-8") != STAMP_TEXT:
        write_text(stamp, STAMP_TEXT)


def check_dvc_yaml(dvc_yaml: str, params_path: str, params_ok: bool) -> bool:
    """dvc.yaml's generated blocks against the registry and the code (params.yaml's data.tasks)."""

    if not Path(dvc_yaml).exists():
        raise ConfigError(f"{dvc_yaml}: not found (run from the project root, or pass --dvc-yaml none)")
    try:
        return stages.main(["--check", "--params", str(params_path), "--dvc-yaml", dvc_yaml]) == 0
    except (ConfigError, DataError) as exc:
        if params_ok:  # else it is the error printed above: once is enough
            print(f"error: {exc}")
        print(f"{dvc_yaml}: not checked ({params_path} does not load)")
        return False


def run(args: argparse.Namespace) -> int:
    """Check params (then put back an experiment's refused params.yaml), then dvc.yaml; write the stamp if valid."""
    ok = True
    try:
        print(check(args.params, args.overlay, args.overrides))
    except ConfigError as exc:
        print(f"error: {exc}")
        ok = False
        undone = undo_experiment(args.params, exc) if args.stamp else None
        if undone:
            print(undone)
    if args.dvc_yaml != "none":
        ok = check_dvc_yaml(args.dvc_yaml, args.params, ok) and ok
    if ok and args.stamp:
        write_stamp(args.stamp)
    return 0 if ok else 1
