"""Params overlays: partial params.yaml files (infra/params/*.yaml, infra/beam/*.yaml) applied on top of
params.yaml, then run as a DVC experiment.

    python -m infra.overlay infra/params/paper.yaml                  # apply, then `dvc exp run -n paper`
    python -m infra.overlay infra/params/paper.yaml infra/params/gpu.yaml --name paper-gpu
    python -m infra.overlay --write infra/beam/flink.yaml            # only apply (then `dvc repro` as usual)
    python -m infra.overlay --print infra/params/paper.yaml          # the same as `dvc exp run -S` arguments
    python -m infra.overlay infra/params/paper.yaml -- --queue       # extra arguments go to `dvc exp run`

Applying merges the overlay into params.yaml in place (comments kept, through DVC's own `-S`
machinery) and, when it changes data.tasks, regenerates the per-task stage tables of dvc.yaml
(infra.stages). `dvc exp run` records the experiment with those changes, as it does for `-S`; the
workspace keeps them afterwards (`git checkout params.yaml dvc.yaml` returns to the defaults).

Every overlay is validated first: the merged params must load (deca.config: no unknown keys, right
types) and every task option must exist for its task, so a typo fails here, not an hour into a run.
Later overlays win; mappings merge key by key; lists and scalars replace.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

from deca.config import Params, from_dict
from deca.custom_tasks import make_tasks
from deca.errors import ConfigError
from deca.params_file import load_params_file
from deca.registry import all_tasks
from infra import stages
from infra.params_yaml import write


def load_overlay(path: str | Path) -> dict[str, Any]:
    """Read one overlay file (a mapping of params sections); ConfigError names a bad file."""
    path = Path(path)
    try:
        data = load_params_file(path)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such overlay file (see infra/params/ and infra/beam/)") from None
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"{path}: an overlay must be a non-empty mapping of params sections")
    return data


def merge(base: Mapping[str, Any], overlay: Mapping[str, Any]) -> dict[str, Any]:
    """Deep merge: mappings merge key by key, anything else in `overlay` replaces."""
    out = copy.deepcopy(dict(base))
    for key, value in overlay.items():
        if isinstance(value, Mapping) and value and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def leaves(overlay: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted key, value) for every leaf; an empty mapping is a leaf ({} sets a task's options to none)."""
    for key, value in overlay.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            yield from leaves(value, dotted + ".")
        else:
            yield dotted, value


def hydra_value(value: Any) -> str:
    """A value in Hydra's override grammar (what `dvc exp run -S` parses)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        # Hydra's quoted strings: backslashes are literal except before a quote or at the end.
        escaped = re.sub(r"(\\+)(?='|$)", lambda m: m.group(1) * 2, value)
        return "'" + escaped.replace("'", "\\'") + "'"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(hydra_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{hydra_value(v)}" for k, v in value.items()) + "}"
    raise ConfigError(f"cannot express {value!r} ({type(value).__name__}) as a params value")


def overrides(overlay: Mapping[str, Any]) -> list[str]:
    """`++key=value` overrides (add or replace) reproducing `overlay` on top of any params.yaml."""
    return [f"++{key}={hydra_value(value)}" for key, value in leaves(overlay)]


def validate(params: Mapping[str, Any], where: str) -> Params:
    """Load the merged params strictly, then check each task's options against that task."""
    loaded = from_dict(Params, params, where=where)

    tasks = [t for t in all_tasks().values() if t.group != "custom"] + make_tasks(loaded)  # nothing registered
    by_key = {t.key: t for t in tasks}
    for key, values in loaded.prepare.task_options.items():
        if key not in by_key:
            raise ConfigError(f"{where}: prepare.task_options.{key}: no task has the key {key!r} "
                              f"(keys: {', '.join(sorted(by_key))})")
        by_key[key].make_options(values)
    return loaded


def combine(paths: Sequence[str | Path], params_path: str | Path = "params.yaml") -> tuple[dict, dict]:
    """(the overlays merged together, params.yaml with them applied), validated."""
    combined: dict[str, Any] = {}
    for path in paths:
        combined = merge(combined, load_overlay(path))
    base = load_params_file(params_path) or {}
    merged = merge(base, combined)
    validate(merged, where=f"{params_path} + {' + '.join(map(str, paths))}")
    return combined, merged


def apply(params_path: str | Path, combined: Mapping[str, Any], dvc_yaml: str | Path | None = None) -> list[str]:
    """Write the overlay into params.yaml and bring dvc.yaml's task tables up to date; returns what changed."""
    changed = [str(params_path)]
    write(params_path, combined)
    dvc_yaml = Path(dvc_yaml) if dvc_yaml else Path(params_path).with_name("dvc.yaml")
    if "tasks" in (combined.get("data") or {}) and dvc_yaml.exists():

        stages.main(["--write", "--dvc-yaml", str(dvc_yaml), "--params", str(params_path)])
        changed.append(str(dvc_yaml))
    return changed


def _alive(pid: Any) -> bool:
    try:
        os.kill(int(pid), 0)
    except (ProcessLookupError, ValueError, TypeError):
        return False
    except PermissionError:
        return True
    return True


def dvc_running(params_path: str | Path) -> str | None:
    """What DVC runs in the repository that holds params_path, else None: a `dvc exp run` in the workspace (DVC's
    .dvc/tmp/exps/run/workspace/workspace.json, with a live pid), a stage's command (.dvc/tmp/rwlock: DVC
    releases its repository lock while a command runs) or a DVC command between stages (.dvc/tmp/lock, which
    DVC holds with flock). Writing params.yaml then would change the experiment that runs (README: experiments
    side by side)."""

    root = next((d for d in Path(params_path).resolve().parents if (d / ".dvc").is_dir()), None)
    if root is None:
        return None
    tmp = root / ".dvc" / "tmp"
    try:
        info = json.loads((tmp / "exps" / "run" / "workspace" / "workspace.json").read_text(encoding="utf-8"))
        if _alive(info.get("pid")):
            return f"`dvc exp run` in the workspace (pid {info['pid']})"
    except (OSError, ValueError, AttributeError):
        pass
    try:
        locks = json.loads((tmp / "rwlock").read_text(encoding="utf-8"))
        held = [*locks.get("write", {}).values(), *(i for v in locks.get("read", {}).values() for i in v)]
        for item in held:
            if _alive(item.get("pid")):
                return f"`{item.get('cmd', 'dvc')}` (pid {item['pid']})"
    except (OSError, ValueError, AttributeError):
        pass
    try:
        import fcntl  # POSIX only: the ImportError below is the other systems
    except ImportError:  # Windows: not checked
        return None
    if (tmp / "lock").is_file():
        with open(tmp / "lock", "a") as handle:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return f"a DVC command ({tmp / 'lock'} is held)"
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    parser = argparse.ArgumentParser(prog="python -m infra.overlay", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("overlays", nargs="+", help="overlay files, applied in order")
    parser.add_argument("--params", default="params.yaml", help="the params file (default: %(default)s)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="only apply to params.yaml (and dvc.yaml); run nothing")
    mode.add_argument("--print", action="store_true", help="print equivalent `dvc exp run -S` arguments; change nothing")
    parser.add_argument("--name", "-n", help="experiment name (default: the overlay file names joined by '-')")
    parser.add_argument("--dvc", default=None, help="dvc executable (default: .venv/bin/dvc, else dvc on PATH)")
    args = parser.parse_args(argv)
    try:
        combined, _ = combine(args.overlays, args.params)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.print:
        print(shlex.join([a for o in overrides(combined) for a in ("-S", o)]))
        return 0
    busy = dvc_running(args.params)
    if busy:
        print(f"error: DVC runs in this repository: {busy}; an experiment in the workspace reads params.yaml, "
              "so it is not changed now. Wait for it; to run experiments side by side, queue "
              "them (`dvc exp run --queue -n NAME` with what --print shows, then `dvc exp run --run-all -j 1`)", file=sys.stderr)
        return 1
    changed = apply(args.params, combined)
    print(f"applied {', '.join(args.overlays)} to {', '.join(changed)}")
    if args.write:
        return 0
    name = args.name or "-".join(Path(p).stem for p in args.overlays)
    dvc = args.dvc or (".venv/bin/dvc" if Path(".venv/bin/dvc").exists() else "dvc")
    cmd = [dvc, "exp", "run", "-n", name, *extra]
    print("+ " + shlex.join(cmd), flush=True)
    env = {**os.environ, "DVC_NO_ANALYTICS": "1"}
    venv_bin = str(Path(".venv/bin").resolve())
    if Path(venv_bin).is_dir():  # the stages call `deca`
        env["PATH"] = venv_bin + os.pathsep + env.get("PATH", "")
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    sys.exit(main())
