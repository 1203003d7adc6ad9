"""`deca compare`: runs side by side, task by task, with their decaScores (like the paper's Table 3).

Sources (any combination; rows keep this order: metrics files, DVC experiments, MLflow runs, paper):
  deca compare --dvc                                  # every DVC experiment that has eval/metrics.json
  deca compare --dvc --exps fully-joint anti-squad    # only these experiments
  deca compare --mlflow                               # the runs of MLflow experiment train.experiment
  deca compare --mlflow decanlp --filter "params.train.strategy = 'fully_joint'"
  deca compare --run-ids 3f2a... 9be1...              # given MLflow runs
  deca compare --metrics eval/metrics.json --params params.yaml --paper   # this run next to Table 3
Without a source, the MLflow experiment of params.yaml (train.experiment) is compared.

Two strategies on the miniature corpora, then the table:
  dvc exp run -n fully-joint -S train.strategy=fully_joint
  dvc exp run -n anti-squad -S train.strategy=anti_curriculum_squad
  deca compare --dvc --out eval/report/strategies

Paired comparison of two runs (or two groups of seed runs) evaluated on the same examples, from the
predictions directories `deca evaluate` wrote (their records keep each example's metric statistics):
  deca compare --runs-a eval/predictions --runs-b ../other/eval/predictions
  deca compare --runs-a s2s-seed1/predictions s2s-seed2/predictions --runs-b qptr-seed1/predictions \
      qptr-seed2/predictions --expect higher
prints per task and for the decaScore: each side's value with its 95% interval, b - a with its paired-bootstrap
95% interval and p-value, McNemar's p-value (exact-match tasks, one run a side), the task's chance/majority
baseline from the gold answers, and the verdict (eval/verdict.py): reproduced / opposite (the interval of b - a
excludes 0 on the --expect side / the other), inconclusive (it covers 0), not tested (a side's interval reaches
the baseline). A task not in every run of both sides is not compared, and named under the table; a sum over
fewer than the ten decaNLP tasks is a "partial decaScore (k of 10 tasks)". --replicates is bounded by
eval/stats.py (enough resamples for a 95% interval, no more than memory allows). Where `deca contamination`
has run (--contamination DIR, default data.contamination_dir; 'none' to skip), also b - a on the clean subset,
without the examples of the --split (default evaluate.split) it flags, and how many it flags per task.

MLflow rows read <split>/<task>/<metric>: the values `deca evaluate` logged at the iteration it scored
(tag evaluated.<split>), else the latest validation round of training. --out PREFIX writes PREFIX.md,
PREFIX.png and PREFIX.json.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from deca.checks import params_from_args
from deca.config import tracking_uri
from deca.contamination import load_flagged
from deca.errors import ConfigError
from deca.io import write_json, write_text
from deca.metric_logging import check_server
from deca.params_args import add_params_arguments
from deca.registry import resolve_tasks
from eval import compare, paired
from eval.stats import MAX_REPLICATES, MIN_REPLICATES, check_replicates


def configure(parser: argparse.ArgumentParser) -> None:
    ml = parser.add_argument_group("MLflow runs")
    ml.add_argument("--mlflow", nargs="*", metavar="EXPERIMENT",
                    help="compare the runs of these MLflow experiments (no name: train.experiment)")
    ml.add_argument("--run-ids", nargs="+", metavar="ID", help="compare these MLflow runs")
    ml.add_argument("--filter", default="", metavar="EXPR",
                    help="MLflow search filter, e.g. \"tags.strategy = 'fully_joint'\" or \"params.train.iterations = '50'\"")
    ml.add_argument("--tracking-uri", metavar="URI",
                    help="MLflow tracking URI (default: $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
    dv = parser.add_argument_group("DVC experiments")
    dv.add_argument("--dvc", action="store_true", help="compare DVC experiments (`dvc exp show --json`)")
    dv.add_argument("--exps", nargs="+", metavar="NAME", help="only these experiments (names or revisions)")
    dv.add_argument("--baseline", action="store_true", help="also the commits the experiments are based on")
    dv.add_argument("--repo", default=".", metavar="DIR", help="the DVC repository (default: %(default)s)")
    fs = parser.add_argument_group("metrics files")
    fs.add_argument("--metrics", nargs="+", metavar="FILE", help="metrics files written by `deca evaluate`")
    fs.add_argument("--label", metavar="TEXT", help="label of the --metrics row (default: 'this run')")
    pr = parser.add_argument_group("paired comparison (per-example statistics of `deca evaluate`)")
    pr.add_argument("--runs-a", nargs="+", metavar="DIR", help="predictions directories of side a (one per seed)")
    pr.add_argument("--runs-b", nargs="+", metavar="DIR", help="predictions directories of side b, same examples")
    pr.add_argument("--expect", choices=("higher", "lower"), default="higher",
                    help="the direction of b - a the claim under test predicts (default: %(default)s)")
    pr.add_argument("--replicates", type=int, default=1000, metavar="N",
                    help=f"bootstrap resamples, {MIN_REPLICATES} to {MAX_REPLICATES:,} (default: %(default)s)")
    pr.add_argument("--seed", type=int, default=0, help="seed of the resampling (default: %(default)s)")
    pr.add_argument("--contamination", metavar="DIR",
                    help="the output of `deca contamination`: also b - a without the examples it flags (default: "
                         "data.contamination_dir where it exists; 'none': no clean columns)")
    parser.add_argument("--paper", action="store_true", help="add the paper's Table 3 rows (MQAN, five strategies)")
    parser.add_argument("--split", help="split of the MLflow metrics (default: evaluate.split)")
    parser.add_argument("--tasks", nargs="+", metavar="SEL",
                        help="task columns (default: the decaNLP tasks any row has, then the others)")
    parser.add_argument("--out", metavar="PREFIX", help="write PREFIX.md, PREFIX.png and PREFIX.json (paired: PREFIX.txt and PREFIX.json)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    add_params_arguments(parser)  # defaults, and the strategy of --metrics rows


def run(args: argparse.Namespace) -> int:
    if args.runs_a or args.runs_b:
        return run_paired(args)
    params_path = Path(args.params)
    params = params_from_args(args)  # the defaults when the file is missing
    split = args.split or params.evaluate.split
    tasks = resolve_tasks(args.tasks) if args.tasks else None
    use_mlflow = args.mlflow is not None or bool(args.run_ids)
    if not (use_mlflow or args.dvc or args.metrics or args.paper):
        use_mlflow, args.mlflow = True, []

    rows: list[compare.Row] = []
    for path in args.metrics or []:
        label = args.label if len(args.metrics) == 1 else None
        rows.append(compare.row_from_metrics_file(path, label or (None if len(args.metrics) == 1 else path),
                                                  params_path if params_path.exists() else None))
    if args.dvc:
        found = compare.rows_from_dvc(compare.dvc_exp_show(args.repo),
                                      metrics_path=params.evaluate.metrics_path,
                                      names=args.exps, include_baseline=args.baseline)
        if args.exps:
            missing = [n for n in args.exps if not any(r.label == n or r.meta.get("rev", "").startswith(n) for r in found)]
            if missing:
                raise ConfigError(f"DVC experiment(s) {', '.join(missing)} not found or without metrics "
                                  f"(`dvc exp show` lists them)")
        rows += found
    if use_mlflow:
        uri = args.tracking_uri or tracking_uri(Path.cwd())
        check_server(uri)
        experiments = args.mlflow or [params.train.experiment]
        rows += compare.rows_from_mlflow(uri, experiments=experiments, run_ids=args.run_ids or (),
                                         filter_string=args.filter, split=split, tasks=tasks)
    if args.paper:
        rows += compare.paper_rows()
    if not rows:
        raise ConfigError("nothing to compare: no run with metrics was found (see `deca compare --help`)")

    cols = compare.columns(rows, tasks)
    if args.out:
        prefix = Path(args.out)
        title = f"decaNLP runs compared ({split} split)"
        write_text(prefix.with_name(prefix.name + ".md"), compare.markdown(rows, cols, title))
        compare.plot(rows, cols, prefix.with_name(prefix.name + ".png"))
        write_json(prefix.with_name(prefix.name + ".json"), compare.to_json(rows, cols))
    if args.json:
        print(json.dumps(compare.to_json(rows, cols), indent=2))
    else:
        print(compare.text_table(rows, cols))
        if args.out:
            print(f"\nwrote {args.out}.md, {args.out}.png, {args.out}.json")
    return 0


def run_paired(args: argparse.Namespace) -> int:
    """`deca compare --runs-a ... --runs-b ...`: the paired table (or JSON), and the --out files."""
    if not (args.runs_a and args.runs_b):
        raise ConfigError("a paired comparison needs both --runs-a and --runs-b (predictions directories)")
    check_replicates(args.replicates, "--replicates")
    params = params_from_args(args)  # the defaults when the file is missing
    source, flagged = contamination_of(args.contamination, params.data.contamination_dir)
    result = paired.paired(args.runs_a, args.runs_b, expect=args.expect, replicates=args.replicates, seed=args.seed,
                           flagged=flagged, split=args.split or params.evaluate.split, source=source)
    if args.out:
        prefix = Path(args.out)
        write_text(prefix.with_name(prefix.name + ".txt"), paired.text(result) + "\n")
        write_json(prefix.with_name(prefix.name + ".json"), result)
    print(json.dumps(result, indent=2) if args.json else paired.text(result))
    return 0


def contamination_of(option: str | None, default: str) -> tuple[str | None, dict[str, set[str]] | None]:
    """(folder, flagged ids) of --contamination: 'none' -> none; unset -> `default` where it exists; a
    folder given is read (a DataError naming its file when it is not a contamination output)."""
    if option is not None and option.lower() == "none":
        return None, None
    if option is None and not Path(default).is_dir():
        return None, None
    folder = option or default
    return folder, load_flagged(folder)
