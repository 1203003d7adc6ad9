"""`deca validate`: check the configuration before running anything.

  deca validate                                   # params.yaml, and dvc.yaml against the code
  deca validate --overlay infra/params/glove.yaml # params.yaml with an overlay applied
  deca validate --set train.iterations=0          # any --set, as `deca train` would take it

Checks that params.yaml (with each --overlay and --set applied) loads into the dataclasses of
deca/config.py (no unknown key, right types, values in range, each task's prepare options valid for
that task), and that dvc.yaml's generated blocks (task tables, each stage's code dependencies) match
the registry and the code (`python -m infra.stages --write` brings them up to date). Exit status 1
when anything is wrong, each problem named with its file.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from deca.config import add_params_arguments, load_params, parse_overrides
from deca.errors import ConfigError


def configure(parser: argparse.ArgumentParser) -> None:
    add_params_arguments(parser)
    parser.add_argument("--overlay", action="append", default=[], metavar="FILE",
                        help="a params overlay to apply on top (infra/params/*.yaml; repeatable, in order)")
    parser.add_argument("--dvc-yaml", default="dvc.yaml", metavar="FILE",
                        help="the pipeline file to check (default: %(default)s; 'none' to skip)")


def check_params(params_path: str, overlays: list[str], sets: list[str]) -> str:
    """A one-line summary of valid params; ConfigError naming the file and key otherwise."""
    from deca.checks import leaves
    from infra import overlay

    overrides: dict = {}
    if overlays:
        combined, _ = overlay.combine(overlays, params_path)  # also each task's prepare options
        overrides.update(overlay.leaves(combined))
    overrides.update(parse_overrides(sets))
    params = load_params(params_path, overrides=overrides)
    where = " + ".join([str(params_path), *overlays] + (["--set"] if sets else []))
    return f"{where}: valid ({sum(1 for _ in leaves(params))} settings)"


def run(args: argparse.Namespace) -> int:
    from infra import stages

    ok = True
    try:
        print(check_params(args.params, args.overlay, args.overrides))
    except ConfigError as exc:
        print(f"error: {exc}")
        ok = False
    if args.dvc_yaml != "none":
        if not Path(args.dvc_yaml).exists():
            raise ConfigError(f"{args.dvc_yaml}: not found (run from the project root, or pass --dvc-yaml none)")
        ok = stages.main(["--check", "--params", str(args.params), "--dvc-yaml", args.dvc_yaml]) == 0 and ok
    return 0 if ok else 1
