"""`deca reproduce`: check the workspace against a run's lineage, retrain it, and compare the weights.

Examples:
  deca reproduce pipeline              # a run name under train.storage_dir, or a run directory
  deca reproduce pipeline --force      # retrain even though the workspace differs from the lineage
  deca reproduce pipeline --check      # only list the differences
  deca reproduce models:/decanlp@champion   # the run that trained a registered version

First every difference between this workspace and what the run recorded when it started (commit, a dirty
tree, dvc.lock, each processed task/split, the vocabulary, torch/ray versions; train/reproduce.py) is
listed; any difference stops here unless --force. Then the run is trained again with its recorded params
and seed, as a new run next to it, and the two best models are compared tensor by tensor: "identical", or
the largest difference of each tensor that differs (exit status 1). Bit-identical weights are expected on
the same kind of machine (CPU, same thread count, same versions). A registered version (models:/NAME/VERSION
or models:/NAME@ALIAS, in the store of $MLFLOW_TRACKING_URI) stands for the run that trained it: the run folder
`deca register` named in its tags must be here.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from deca.checks import params_from_args
from deca.config import add_params_arguments
from deca.errors import ConfigError

SHOWN = 10  # differing tensors printed


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN|models:/NAME@ALIAS",
                        help="a run directory, a run name under train.storage_dir, or a registered model version")
    parser.add_argument("--force", action="store_true", help="retrain even if the workspace differs from the lineage")
    parser.add_argument("--check", action="store_true", help="only compare the workspace with the lineage")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from deca.config import tracking_uri
    from deca.runs import RUN_FILE, best_model_path, read_run_file, run_folder
    from train.reproduce import compare_weights, differences, recorded_lineage, registered_run, retrain

    params = params_from_args(args)
    run_name = registered_run(args.run, tracking_uri(Path.cwd())) if args.run.startswith("models:/") else args.run
    folder = run_folder(run_name, params.train.storage_dir)
    info = read_run_file(folder / RUN_FILE)
    if "params" not in info:
        raise ConfigError(f"{folder / RUN_FILE}: the run recorded no params; it cannot be retrained")
    record = recorded_lineage(info["tracking_uri"], info["mlflow_run_id"])
    found = differences(record, Path.cwd(), info["params"])
    for line in found:
        print(f"differs: {line}")
    if args.check:
        print("workspace: as recorded" if not found else f"workspace: {len(found)} difference(s)")
        return 1 if found else 0
    if found and not args.force:
        raise ConfigError(f"{folder}: the workspace differs from the run's lineage in {len(found)} way(s), listed "
                          "above; restore them (git checkout, dvc checkout) or pass --force")
    outcome = retrain(info["params"], folder.name, Path.cwd(), progress=not args.no_progress)
    if outcome.best is None:
        raise ConfigError(f"{outcome.run_dir}: the retrained run has no best model to compare")
    diff = compare_weights(best_model_path(folder), best_model_path(outcome.run_dir))
    return report(diff, folder, outcome.run_dir)


def report(diff: dict[str, float], recorded: Path, new: Path) -> int:
    """Print the comparison; 0 when every tensor is bit-identical."""
    if not diff:
        print(f"identical: the best model of {new.name} is bit-identical to {recorded.name}'s")
        return 0
    print(f"different: {len(diff)} tensor(s) of {new.name}'s best model differ from {recorded.name}'s; "
          "largest absolute difference per tensor:")
    for key, value in sorted(diff.items(), key=lambda kv: -kv[1])[:SHOWN]:
        print(f"  {key}: {value:.3g}")
    return 1
