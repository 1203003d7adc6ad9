"""`deca register`: a run's best model as an MLflow model, in the Model Registry, and its aliases.

Examples:
  deca register --run pipeline                     # log it as runs:/<run id>/model (and register it when
                                                   # train.register_model names a model)
  deca register --run pipeline --name decanlp --alias challenger   # a new version of decanlp, aliased
  deca register --name decanlp --version 2 --alias champion        # promote: champion -> version 2
  deca register --list --name decanlp              # versions, aliases and runs
  deca register --name decanlp --version 3 --alias champion \
      --candidate-predictions eval/v3 --holder-predictions eval/v2   # gated: moves only if v3 is better
  deca register --run pipeline --name decanlp --gate-on-create     # the new version judged against champion
  deca predict --model models:/decanlp@champion --context "..." --question "..."
  mlflow models serve -m models:/decanlp@champion --env-manager local -p 5001   # POST /invocations

--run is a run directory or a run name under train.storage_dir (default: the latest run). The model is
logged into the run's own MLflow run (its deca_run.json names it and its store), once per checkpoint; it
is an MLflow pyfunc model that answers as `deca predict` does (infer/mlflow_model.py). `deca train`
logs it at the end of every finished run (registered when train.register_model is set). --version,
--alias (without --run) and --list use the store of MLFLOW_TRACKING_URI (default sqlite:///mlflow.db here).

Gated promotion (infer/promotion.py, eval/gate.py): with --candidate-predictions and
--holder-predictions (`deca evaluate` of the new version and of the alias's current one, on the same
validation examples), or for an alias listed in register.gated, the alias moves only if the paired 95% lower
bound of the decaScore gain is above 0 (a tie never moves it) and no task's lower bound is below minus its
margin (register.margins); with register.accept: non_inferior, only the margins are tested. The evidence is
logged on the version, a refusal is one line naming the task.

--gate-on-create [ALIAS] (with --run and --name): the new version is evaluated beside the version ALIAS
(default champion) points at, with params.evaluate's settings, into eval/gate/<name>-v<version>/, and the
gate's verdict is written to the new version's tags (gate.<alias>.*); the alias does not move
(infer/gate_on_create.py).
"""
from __future__ import annotations

import argparse
import time

from deca.checks import params_from_args
from deca.errors import ConfigError
from deca.params_args import add_params_arguments
from deca.runs import run_folder


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", metavar="NAME|DIR", help="the run whose best model to log and register (default: "
                                                          "the latest run under train.storage_dir)")
    parser.add_argument("--name", help="Model Registry name (default: train.register_model)")
    parser.add_argument("--version", metavar="N", help="promote: an existing version of --name to point --alias at")
    parser.add_argument("--alias", action="append", default=[], metavar="ALIAS",
                        help="alias of the new version (or of --version), e.g. champion; repeatable")
    parser.add_argument("--list", action="store_true", help="list the versions of --name with their aliases")
    parser.add_argument("--candidate-predictions", action="append", default=[], metavar="DIR",
                        help="gate: `deca evaluate` predictions of --version (repeatable: seed runs)")
    parser.add_argument("--holder-predictions", action="append", default=[], metavar="DIR",
                        help="gate: `deca evaluate` predictions of the version the alias points at now")
    parser.add_argument("--gate-on-create", nargs="?", const="champion", metavar="ALIAS",
                        help="with --run: evaluate the new version beside the version ALIAS (default champion) "
                             "points at and write the gate's verdict to the new version's tags")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from eval.gate import check_config

    params = params_from_args(args, commands=["register"], gate=check_config)
    name = args.name or params.train.register_model
    if args.list or args.version:
        if args.gate_on_create:
            raise ConfigError("--gate-on-create goes with --run (it judges the version that --run creates); to "
                              "promote an existing version through the gate give --candidate-predictions and "
                              "--holder-predictions")
        if args.run:
            raise ConfigError("--run logs and registers a run's model; --version and --list are about versions "
                              "already registered: give one or the other")
        if not name:
            raise ConfigError(f"--{'list' if args.list else 'version'} needs --name (or train.register_model)")
        if args.list:
            return show(name)
        return promote(name, args.version, args.alias, params.register, args.candidate_predictions,
                       args.holder_predictions)
    gated = sorted(set(args.alias) & set(params.register.gated))
    if gated or args.candidate_predictions or args.holder_predictions:
        raise ConfigError(f"--run with a gated alias ({', '.join(gated) or 'predictions given'}): register the run "
                          "without it, then promote with --version N --alias ALIAS --candidate-predictions DIR "
                          "--holder-predictions DIR")
    if args.gate_on_create and not name:
        raise ConfigError("--gate-on-create needs --name (or train.register_model): it judges a new version")
    done = register(args.run, name, tuple(args.alias), params.train.storage_dir)
    return gate_on_create(params, name, done.version, args.gate_on_create) if args.gate_on_create else 0


def gate_on_create(params, name: str, version: str, alias: str) -> int:
    """The gate's verdict on `version` of `name` against the holder of `alias`, printed and tagged."""
    from infer.gate_on_create import gate_new_version

    found = gate_new_version(params, name, version, alias)
    if found is None:
        print(f"gate: version {version} not compared (nothing else at {alias}); tag gate.{alias}.decision says why")
        return 0
    decision = "accepted" if found["accepted"] else "refused: " + "; ".join(found["reasons"])
    print(f"gate: {name} version {version} against version {found['holder_version']} at {alias}: {decision}; "
          f"verdict in the version's tags gate.{alias}.* (the alias did not move)")
    return 0


def register(run: str | None, name: str | None, aliases: tuple[str, ...], storage_dir: str):
    """Log (and register) the best model of `run`; prints what was done and returns it (registry.Registered)."""
    from infer.registry import register_run

    if aliases and not name:
        raise ConfigError("--alias needs --name (or train.register_model): aliases belong to registered versions")
    run_dir = run_folder(run, storage_dir)
    done = register_run(run_dir, name, aliases)
    how = "logged" if done.logged else "already logged"
    print(f"{how} the best model of run {run_dir.name} as {done.model_uri}")
    if done.version:
        print(f"registered {done.name} version {done.version}: models:/{done.name}/{done.version}")
    for alias in done.aliases:
        print(f"alias {alias} -> {done.name} version {done.version}: models:/{done.name}@{alias}")
    return done


def promote(name: str, version: str, aliases: list[str], config, candidate: list[str], holder: list[str]) -> int:
    """Point every alias at `version` of `name`; through the gate with predictions or when register.gated."""
    from infer.promotion import gated_promote
    from infer.registry import promote as set_alias

    if not aliases:
        raise ConfigError("--version goes with --alias ALIAS (the alias to point at that version)")
    if bool(candidate) != bool(holder):
        raise ConfigError("the gate compares two sides: give both --candidate-predictions and --holder-predictions")
    for alias in aliases:
        if candidate or alias in config.gated:
            done = gated_promote(name, version, alias, candidate, holder, config)
            before = done.before
            if done.evidence:
                print(accepted(done.evidence, name, version))
        else:
            before = set_alias(name, version, alias)
        was = f" (was version {before})" if before and before != version else ""
        print(f"alias {alias} -> {name} version {version}{was}: models:/{name}@{alias}")
    return 0


def accepted(evidence: dict, name: str, version: str) -> str:
    """The line of a promotion the gate accepted: how (superior, non-inferior) and the decaScore difference."""
    how, change = ("", "gain") if evidence["accept"] == "superior" else (" as non-inferior", "change")
    score = evidence["rows"].get("decascore", {}).get("diff")
    shown = f" (decaScore {change} {score['value']:+.2f} [95% {score['low']:+.2f}, {score['high']:+.2f}])" \
        if score else ""
    return f"gate: accepted{how}{shown}; evidence logged on {name} version {version}"


def show(name: str) -> int:
    """One line per version of `name`: version, aliases, run, creation time."""
    from infer.registry import versions

    for v in versions(name):
        created = time.strftime("%Y-%m-%d %H:%M", time.localtime(v["created"] / 1000))
        aliases = ",".join(v["aliases"]) or "-"
        print(f"{name} version {v['version']:>3}  aliases {aliases:<20} run {v['run'] or '-'} "
              f"({v['run_id'] or '-'})  {created}")
    return 0
