"""`deca contamination`: which validation and test examples overlap training data (a Beam job).

  deca contamination [--tasks SEL ...] [--train-tasks SEL ...] [--splits validation,test] [--processed DIR]
                     [--out DIR]

Reads the processed splits (data.processed_dir), hashes the word 13-grams of every training split (texts
under 13 tokens: their whole token sequence, lowercased) and checks the context, question and answer of
every validation and test example against them (pipelines/contamination.py: what counts, and why
templates and labels that fill a task's training data are "common", not overlap). Writes, swapped in as
one folder (default data.contamination_dir):

  <out>/contamination.json     the task x task matrix: per evaluation task/split and training task, the
                               examples (and share) overlapping by field context/question/answer/any,
                               and common_only (matched only templates, labels, boilerplate)
  <out>/contaminated_ids.json  the ids of the flagged examples per evaluation task/split, overall, by
                               field and by training task

`deca evaluate` reads it (evaluate.contamination) and reports each task's score and the decaScore also on
the clean subset, the examples not flagged. Runs on the runner of prepare.runner / prepare.beam_options,
and takes Beam flags as `deca prepare` does (e.g. --runner=DaskRunner --dask_local_workers=4).
"""
from __future__ import annotations

import argparse
import logging

from deca.checks import params_from_args
from deca.params_args import add_params_arguments
from deca.registry import resolve_tasks

LOG = logging.getLogger("deca.contamination")
PASS_THROUGH = "beam_args"


def configure(parser: argparse.ArgumentParser) -> None:
    from pipelines.contamination_hashes import COMMON_MIN, COMMON_SHARE, NGRAM

    parser.add_argument("--tasks", nargs="+", metavar="SEL",
                        help="tasks whose validation and test splits are checked, and whose training splits they "
                             "are checked against: names, globs, 'decanlp', 'all' (default: data.tasks)")
    parser.add_argument("--train-tasks", nargs="+", metavar="SEL",
                        help="check against the training splits of these tasks instead (default: --tasks)")
    parser.add_argument("--splits", default="validation,test", metavar="S1,S2",
                        help="the evaluation splits checked (default: validation,test, where a task has them)")
    parser.add_argument("--processed", metavar="DIR", help="processed data (default: data.processed_dir)")
    parser.add_argument("--out", metavar="DIR", help="output folder (default: data.contamination_dir)")
    parser.add_argument("--ngram", type=int, default=NGRAM, metavar="N", help=f"n-gram length (default {NGRAM})")
    parser.add_argument("--common-share", type=float, default=COMMON_SHARE, metavar="F",
                        help="a text in at least this share of a task's training examples is common, not overlap "
                             f"(default {COMMON_SHARE})")
    parser.add_argument("--common-min", type=int, default=COMMON_MIN, metavar="K",
                        help=f"... and in at least K of them (default {COMMON_MIN})")
    add_params_arguments(parser)
    parser.set_defaults(beam_args=[])


def _selectors(values):
    return [s for v in values or [] for s in v.replace(",", " ").split() if s] or None


def run(args: argparse.Namespace) -> int:
    from pipelines import contamination

    if not getattr(args, "verbose", False):
        logging.getLogger("apache_beam").setLevel(logging.WARNING)
    params = params_from_args(args, commands=["prepare"])  # the runner and Beam options are prepare's
    names = resolve_tasks(_selectors(args.tasks) or params.data.tasks)
    train = resolve_tasks(_selectors(args.train_tasks)) if args.train_tasks else None
    job = contamination.make_job(names, args.processed or params.data.processed_dir,
                                 args.out or params.data.contamination_dir, n=args.ngram,
                                 common_share=args.common_share, common_min=args.common_min, train_tasks=train,
                                 splits=[s for s in args.splits.split(",") if s])
    result = contamination.run(job, params.prepare, args.beam_args)
    print(contamination.summary(result))
    LOG.info("counters: %s", " ".join(f"{k}={v:,}" for k, v in result.counters.items()))
    return 0
