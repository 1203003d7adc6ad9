"""`deca`: one command line, with subcommands mirroring the pipeline stages.

Each subcommand lives next to the code it drives, in a module named after it (``<command>_cli.py``)
exposing ``configure(parser: argparse.ArgumentParser) -> None`` and ``run(args) -> int | None``; the
help's epilog is the module's ``EPILOG``, else its docstring after the first line. Every command that
reads params takes ``--params FILE`` and ``--set KEY=VALUE`` (deca.params_args.add_params_arguments).
Modules are imported only for the subcommand being run, so `deca --help` and `deca ls` stay fast.
Run by DVC as a stage, a command that reads params refuses a params file changed since the run's first
stage read it (deca/params_guard.py).
A module that sets ``PASS_THROUGH = "<attribute>"`` receives the options it does not declare in that
attribute of args (e.g. `deca prepare` hands them to Beam's PipelineOptions); elsewhere they are errors.
"""
from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
import traceback

from deca.errors import DecaError, exception_chain, interrupted
from deca.params_guard import begin

# name -> (module, one-line help), in stage order.
COMMANDS: dict[str, tuple[str, str]] = {
    "ls": ("deca.ls_cli", "list every registered task with its splits, metric and sources"),
    "download": ("pipelines.download_cli", "fetch the raw corpora (official URLs or a local mirror), verified"),
    "prepare": ("pipelines.prepare_cli", "Beam job: raw corpora -> (context, question, answer) Parquet + vocabulary"),
    "contamination": ("pipelines.contamination_cli", "Beam job: validation/test examples that overlap training data (13-grams)"),
    "train": ("train.train_cli", "multitask MQAN training on Ray Train, tracked in MLflow"),
    "evaluate": ("infer.evaluate_cli", "decode a checkpoint on a split, write predictions, score and report"),
    "predict": ("infer.predict_cli", "ask a trained model your own questions (JSON lines in and out)"),
    "serve": ("infer.serve_cli", "serve a trained model over HTTP: JSON API and a demo page (uvicorn or Ray Serve)"),
    "register": ("infer.register_cli", "log a run's best model as an MLflow model; Model Registry versions and aliases"),
    "lineage": ("infer.lineage_cli", "where a run's or a registered model came from: commit, params, data"),
    "reproduce": ("train.reproduce_cli", "check the workspace against a run's lineage, retrain it, compare weights"),
    "score": ("eval.score_cli", "score prediction files against the processed gold; decaScore"),
    "compare": ("eval.compare_cli", "compare runs (MLflow or DVC experiments) task by task, like Table 3"),
    "validate": ("infra.validate_cli", "check params.yaml (and overlays) against the config, dvc.yaml against the code"),
    "repro": ("infra.repro_cli", "dvc repro with independent stages run at once (--jobs N), recorded by DVC"),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="deca",
        description="The Natural Language Decathlon as a reproducible pipeline.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Run `deca <command> --help` for the options of one command.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for name, (module, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        if name == only:
            mod = importlib.import_module(module)
            p.epilog = getattr(mod, "EPILOG", None) or (mod.__doc__ or "").split("\n", 2)[-1]
            mod.configure(p)
            p.set_defaults(_run=mod.run, _pass_through=getattr(mod, "PASS_THROUGH", None))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `deca` console script."""
    argv = list(sys.argv[1:] if argv is None else argv)
    only = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(only if only in COMMANDS else None)
    args, extras = parser.parse_known_args(argv)
    target = getattr(args, "_pass_through", None)
    if extras and not target:
        parser.error(f"unrecognized arguments: {' '.join(extras)}")
    if target:
        setattr(args, target, list(getattr(args, target, None) or []) + extras)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,  # Beam attaches a root handler on import
    )
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        finished = begin(args.params) if hasattr(args, "params") else None
        code = int(args._run(args) or 0)
        if finished and code == 0:
            finished()  # a params.yaml written while this ran: DVC must not record the results under it
        sys.stdout.flush()  # a reader that went away (`deca ls | head -1`) shows here, not at exit
        return code
    except BaseException as exc:  # noqa: BLE001 - every failure ends here, as one clear line
        return report_failure(exc, args.verbose)


def reader_gone() -> int:
    """The reader of standard output went away (`deca ... | head -1`): end quietly, as `cat` would (141, i.e.
    128 + SIGPIPE), with nothing more written to the closed pipe (not even at exit)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is no real file (a test's capture)
        pass
    return 141


def report_failure(exc: BaseException, verbose: bool = False) -> int:
    """Print one line (and a fix) for an expected failure and return the exit code; re-raise anything else.

    Ctrl-C is "interrupted" with 130, also when a framework re-raised it as another error (Beam wraps it in
    a RuntimeError); a closed standard output (a pipe to `head`) ends quietly with 141; an OSError (disk full, permissions) anywhere in the chain names its path. With
    `deca -v` the traceback is printed too.
    """

    if interrupted(exc):
        print("interrupted", file=sys.stderr)
        return 130
    chain = exception_chain(exc)
    if any(isinstance(e, BrokenPipeError) for e in chain):
        return reader_gone()
    known = next((e for e in chain if isinstance(e, (DecaError, OSError))), None)
    if known is None or isinstance(exc, SystemExit):
        raise exc
    if verbose:
        traceback.print_exception(exc)
    if isinstance(known, OSError) and not isinstance(known, DecaError):
        where = f"{known.filename}: " if known.filename else ""
        text = f"{where}{known.strerror or known}"
    else:
        text = str(known)
    print(f"error: {text}", file=sys.stderr)
    if not verbose and not isinstance(known, DecaError):
        print("(run `deca -v ...` for the traceback)", file=sys.stderr)
    return 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
