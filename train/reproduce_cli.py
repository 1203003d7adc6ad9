"""`deca reproduce`: check the workspace against a run's lineage, retrain it, and compare the weights.

Examples:
  deca reproduce models:/decanlp/1         # the run that trained a registered version (or models:/NAME@ALIAS)
  deca reproduce 3f2a...e9                 # an MLflow run id (store: MLFLOW_TRACKING_URI)
  deca reproduce pipeline                  # the run a run folder (or its name under train.storage_dir) holds now
  deca reproduce pipeline --check          # only list the differences
  deca reproduce pipeline --force          # retrain even though the workspace differs from the lineage
  deca reproduce checkpoints/reproduce-3f2a0c1d-20260101-120000 --adopt   # take a reproduction as a run

A source stands for its MLflow run, and what that run recorded (its lineage, params and logged model) is
what is checked and retrained: never a run folder's name, which later runs reuse (deca/run_source.py).
First every difference between this workspace and the run's lineage (the code against its commit, the
outputs the pipeline rewrites left out; its tasks' prepare stages in dvc.lock, each processed task/split,
the vocabulary, torch/ray versions; train/reproduce.py) is listed; any difference stops here unless --force.
Then the run is trained again with its recorded params and seed into its own folder
<train.storage_dir>/reproduce-<run id>-<time>, which no command takes as the latest run (predict, serve,
evaluate, register skip it, saying so) until --adopt or --run DIR names it; the two best models are compared
tensor by tensor: "identical", or the largest difference of each tensor that differs (exit status 1).
Bit-identical weights are expected on the same kind of machine (CPU, same thread count, same versions).
"""
from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from deca.checks import params_from_args
from deca.errors import ConfigError
from deca.metric_logging import check_server
from deca.params_args import add_params_arguments
from deca.run_source import resolve_run
from deca.runs import adopt, best_model_path, run_folder

SHOWN = 10  # differing tensors printed


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN|RUN_ID|models:/NAME@ALIAS",
                        help="a registered model version, an MLflow run id, or a run directory or name under "
                             "train.storage_dir")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--force", action="store_true", help="retrain even if the workspace differs from the lineage")
    which.add_argument("--check", action="store_true", help="only compare the workspace with the lineage")
    which.add_argument("--adopt", action="store_true",
                       help="RUN is a reproduction's folder: make it a run like any other (the latest run)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from train.reproduce import differences, quiet_downloads, rebase, recorded_lineage, recorded_params

    params = params_from_args(args)
    if args.adopt:
        folder = run_folder(args.run, params.train.storage_dir)
        adopt(folder)
        print(f"adopted: {folder} is a run like any other now (the latest run while it is the newest)")
        return 0
    source = resolve_run(args.run, params.train.storage_dir)
    check_server(source.uri)  # a server that is down: one line now, not after MLflow's minutes of retries
    with quiet_downloads():
        record = recorded_lineage(source.uri, source.run_id)
        run_params = rebase(recorded_params(source.uri, source.run_id), record, Path.cwd())
    print(f"run: {source.run_id} in {source.uri}")
    found = differences(record, Path.cwd(), run_params)
    for line in found:
        print(f"differs: {line}")
    if args.check:
        print("workspace: as recorded" if not found else f"workspace: {len(found)} difference(s)")
        return 1 if found else 0
    if found and not args.force:
        raise ConfigError(f"{args.run}: the workspace differs from the run's lineage in {len(found)} way(s), listed "
                          "above; restore them (git checkout, dvc checkout) or pass --force")
    return reproduce(source, run_params, params.train.storage_dir, progress=not args.no_progress)


def reproduce(source, run_params: dict, storage_dir: str, progress: bool) -> int:
    """Retrain run `source` into its reproduction folder and compare the best models; 0 when identical."""
    from train.reproduce import compare_weights, quiet_downloads, recorded_weights, retrain

    with tempfile.TemporaryDirectory() as tmp:
        with quiet_downloads():
            recorded = recorded_weights(source, Path(tmp))
        outcome = retrain(run_params, source.run_id, Path.cwd(), storage_dir, progress=progress)
        if outcome.best is None:
            raise ConfigError(f"{outcome.run_dir}: the retrained run has no best model to compare")
        code = report(compare_weights(recorded, best_model_path(outcome.run_dir)), source.run_id, outcome.run_dir)
    print(f"reproduction: {outcome.run_dir}; no command takes it as the latest run: name it with --run "
          f"{outcome.run_dir}, or `deca reproduce {outcome.run_dir} --adopt`")
    return code


def report(diff: dict[str, float], run_id: str, new: Path) -> int:
    """Print the comparison; 0 when every tensor is bit-identical."""
    if not diff:
        print(f"identical: the best model of {new.name} is bit-identical to the one run {run_id} logged")
        return 0
    print(f"different: {len(diff)} tensor(s) of {new.name}'s best model differ from the one run {run_id} logged; "
          "largest absolute difference per tensor:")
    for key, value in sorted(diff.items(), key=lambda kv: -kv[1])[:SHOWN]:
        print(f"  {key}: {value:.3g}")
    return 1
