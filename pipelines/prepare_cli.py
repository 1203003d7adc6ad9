"""`deca prepare`: the Beam preprocessing job (per-task Parquet data) and, with --vocab, the vocabulary."""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from deca.checks import params_from_args
from deca.errors import DataError
from deca.params_args import add_params_arguments
from deca.registry import resolve_tasks

LOG = logging.getLogger("deca.prepare")

DESCRIPTION = """\
Two modes, both Apache Beam pipelines:

  deca prepare --tasks sst woz.en [--splits train,validation] [--mirror DIR | --raw-dir DIR] [--out DIR]
      raw corpora -> <out>/<task>/<split>/part-NNNNN.parquet (deca.schema.EXAMPLE_SCHEMA),
      <out>/<task>/stats.json (examples, tokens per field, drops by reason, per split) and
      <out>/<task>/dropped.parquet (every example left out, with its reason).
      Each task directory is replaced atomically when the whole run succeeded; with --splits, the
      task's other splits are kept as they were. A bad raw file stops the run with an error naming
      the file and line, and leaves <out> untouched.

  deca prepare --vocab [PATH] [--tasks ...] [--out DIR]
      the processed train splits of the tasks -> the vocabulary (default data.vocab_path): the
      prepare.vocab_size most frequent tokens of context, question and answer, ties by token.
      Tasks default to prepare.vocab_tasks, else data.tasks; eval-only tasks are skipped.
"""

BEAM_HELP = """\
Beam pipeline options (standard PipelineOptions; any option not listed above goes to Beam):
  --runner NAME                 FnApiRunner (default: in-process), BundleBasedDirectRunner, DaskRunner,
                                FlinkRunner, SparkRunner, DataflowRunner, PortableRunner
  --direct_num_workers N        workers of the local runner (0 = one per CPU)
  --direct_running_mode MODE    in_memory | multi_threading | multi_processing (local runner)
  --dask_client_address ADDR    Dask scheduler (DaskRunner), e.g. tcp://host:8786; without it a local
                                cluster of --dask_local_workers N processes (0 = one per CPU)
  --flink_master HOST:PORT      Flink cluster (FlinkRunner); --spark_master_url for SparkRunner
  --environment_type TYPE       LOOPBACK | DOCKER | PROCESS (SDK workers of portable runners)
  --project, --region, --temp_location, --staging_location   Dataflow settings
Defaults come from params.yaml (prepare.runner, prepare.beam_options); command-line flags win.
--out (and --raw-dir/--mirror) must be on a filesystem the driver and all workers share; see infra/.

Examples:
  deca prepare --tasks all --mirror tests/fixtures/corpora --out data/processed
  deca prepare --tasks sst --mirror ../shared/corpora --direct_num_workers=2 --direct_running_mode=multi_processing
  deca prepare --tasks sst --runner DaskRunner --dask_client_address=tcp://127.0.0.1:8786
  deca prepare --vocab --tasks decanlp
"""


def _csv_list(value: str) -> list[str]:
    return [v for v in value.replace(",", " ").split() if v]


def _selectors(values: list[str] | None) -> list[str]:
    return [v for value in values or [] for v in _csv_list(value)]


# Options this parser does not know are Beam pipeline options: deca.cli collects them into args.beam_args.
PASS_THROUGH = "beam_args"


def configure(parser: argparse.ArgumentParser) -> None:
    """Declare the options of `deca prepare`; unknown options go to Beam (args.beam_args, see PASS_THROUGH)."""
    parser.description = DESCRIPTION
    parser.epilog = BEAM_HELP
    parser.add_argument("--tasks", nargs="+", metavar="TASK",
                        help="task names, globs (mrqa.*), 'decanlp' or 'all'; comma or space separated "
                             "(default: data.tasks of params.yaml)")
    parser.add_argument("--splits", type=_csv_list, metavar="S1,S2",
                        help="only these splits (train,validation,test); a task's other splits are kept")
    src = parser.add_mutually_exclusive_group()
    src.add_argument("--mirror", metavar="DIR",
                     help="read the raw files directly from a mirror (layout of ../shared/corpora), no copy")
    src.add_argument("--raw-dir", metavar="DIR", help="the downloaded raw files (default: data.raw_dir)")
    parser.add_argument("--out", metavar="DIR", help="processed data directory (default: data.processed_dir)")
    parser.add_argument("--vocab", nargs="?", const="", default=None, metavar="PATH",
                        help="vocabulary mode: build PATH (default: data.vocab_path) from the processed train splits")
    parser.add_argument("--vocab-size", type=int, metavar="N", help="vocabulary size (default: prepare.vocab_size)")
    add_params_arguments(parser)
    parser.set_defaults(beam_args=[])


def run(args: argparse.Namespace) -> int:
    """Run one of the two modes (see the module help)."""
    if not getattr(args, "verbose", False):
        logging.getLogger("apache_beam").setLevel(logging.WARNING)
    params = params_from_args(args, commands=["prepare"])  # checked as `deca validate` checks it for prepare
    out = Path(args.out or params.data.processed_dir)
    if args.vocab is not None:
        return _run_vocab(args, params, out)

    from pipelines import prepare

    names = resolve_tasks(_selectors(args.tasks) or params.data.tasks)
    raw_root = Path(args.mirror or args.raw_dir or params.data.raw_dir)
    if args.mirror and not raw_root.is_dir():
        raise DataError(raw_root, "mirror directory not found", fix="pass the directory that holds <task>/... raw files")
    cfg = params.prepare
    job = prepare.make_job(names, raw_root, out, cfg, splits=args.splits, from_mirror=bool(args.mirror))
    result = prepare.run(job, cfg, args.beam_args)
    print(prepare.job_summary(result))
    _log_counters(result.counters)
    return 0


def _run_vocab(args: argparse.Namespace, params, out: Path) -> int:
    from pipelines import vocab

    if args.mirror or args.raw_dir or args.splits:
        print("note: --mirror/--raw-dir/--splits are ignored with --vocab (it reads the processed data)", file=sys.stderr)
    selectors = _selectors(args.tasks) or params.prepare.vocab_tasks or params.data.tasks
    path = Path(args.vocab or params.data.vocab_path)
    info = vocab.run(resolve_tasks(selectors), out, path, params.prepare, args.beam_args, size=args.vocab_size)
    print(f"{info['path']}: {info['size']:,} tokens from {info['rows']:,} training examples "
          f"({info['tokens']:,} tokens) of {', '.join(info['tasks'])} in {info['seconds']:.1f} s")
    return 0


def _log_counters(counters: dict[str, int]) -> None:
    """Beam counters, one log line per task: ``sst: train.read=6920 train.rows=6920 ...``."""
    by_task: dict[str, list[str]] = {}
    for name, value in counters.items():
        task, _, rest = name.partition(".")
        # task names may contain dots (woz.en): the counter name ends with <split>.<what>[.<reason>]
        parts = name.split(".")
        for i, part in enumerate(parts):
            if part in ("train", "validation", "test"):
                task, rest = ".".join(parts[:i]), ".".join(parts[i:])
                break
        by_task.setdefault(task, []).append(f"{rest}={value:,}")
    for task, items in by_task.items():
        LOG.info("counters %s: %s", task, " ".join(items))
