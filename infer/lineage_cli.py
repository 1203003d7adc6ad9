"""`deca lineage`: where a model came from, link by link, and which links are missing.

Examples:
  deca lineage pipeline                      # a run name under train.storage_dir (or a run directory)
  deca lineage 3f2a...e9                     # an MLflow run id (store: MLFLOW_TRACKING_URI)
  deca lineage models:/decanlp@champion      # a registered version (or models:/decanlp/3)

Prints the chain model -> run -> commit -> params -> processed data -> raw corpus checksums, as the run
recorded it when it started (its ``lineage.*`` tags and lineage/lineage.json; deca/lineage.py), then one
`missing:` line per link that cannot be followed (no logged model, a dirty tree, no dvc.lock, a task without
a prepare stage...). A registered version's own ``lineage.*`` tags are checked against its run's.
Exit status 0 when the chain is complete, 1 when a link is missing.
"""
from __future__ import annotations

import argparse

from deca.checks import params_from_args
from deca.lineage import PREFIX, chain
from deca.metric_logging import check_server
from deca.params_args import add_params_arguments
from deca.run_source import resolve_run


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", metavar="RUN|RUN_ID|models:/NAME@ALIAS",
                        help="a run directory or name under train.storage_dir, an MLflow run id, or a registered "
                             "version (models:/NAME/VERSION, models:/NAME@ALIAS)")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    params = params_from_args(args)
    lines, missing = lineage_of(args.source, params.train.storage_dir)
    for line in lines:
        print(line)
    for gap in missing:
        print(f"missing: {gap}")
    return 1 if missing else 0


def resolve(source: str, storage_dir: str) -> tuple[str, str, list[str], dict[str, str] | None]:
    """(tracking URI, run id, model lines, the version's tags or None) of what `source` names."""
    found = resolve_run(source, storage_dir)
    mv = found.version
    if mv is not None:
        aliases = ", ".join(mv.aliases) or "none"
        return found.uri, found.run_id, [f"model    models:/{mv.name}/{mv.version} (aliases: {aliases})"], dict(mv.tags)
    return found.uri, found.run_id, [f"folder   {found.folder}"] if found.folder else [], None


def lineage_of(source: str, storage_dir: str) -> tuple[list[str], list[str]]:
    """(lines, missing links) of the lineage of `source` (see the module docstring)."""
    from infer.registry import run_and_models

    uri, run_id, lines, version_tags = resolve(source, storage_dir)
    check_server(uri)
    r, models, record = run_and_models(uri, run_id)
    missing = []
    if models:
        lines.append(f"model    runs:/{run_id}/model (logged model {models[0]})")
    else:
        missing.append(f"model: run {run_id} has no logged model (`deca register --run DIR` logs it)")
    lines.append(f"run      {run_id} ({r.info.run_name}, {r.info.status}) in {uri}")
    run_tags = {k: v for k, v in r.data.tags.items() if k.startswith(PREFIX)}
    if version_tags is not None:
        missing += version_gaps(version_tags, run_tags)
    more, gaps = chain(record)
    return lines + more, missing + gaps


def version_gaps(version_tags: dict[str, str], run_tags: dict[str, str]) -> list[str]:
    """What a registered version's lineage tags lack or contradict of its run's."""
    if not run_tags:
        return []
    differ = sorted(k for k, v in run_tags.items() if version_tags.get(k) != v)
    if not differ:
        return []
    return [f"version tags: {len(differ)} lineage tag(s) absent or different from its run's ({differ[0]}, ...); "
            "register the run again"]
