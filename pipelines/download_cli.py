"""`deca download`: fetch the raw corpora of the selected tasks (official URLs or a local mirror), verified.

Examples::

    deca download --tasks sst woz.en                      # official URLs -> data/raw
    deca download --tasks decanlp --mirror ../shared/corpora
    deca download --tasks 'mrqa.*' --continue-on-error    # report every failure at the end

Without ``--tasks`` / ``--raw-dir`` / ``--mirror`` the values of ``data.tasks`` / ``data.raw_dir`` /
``data.mirror`` in params.yaml apply.
Without ``--mirror``, ``data.mirror`` in params.yaml applies (the official URLs when it is null). See `pipelines.download` for what happens to each file.
"""
from __future__ import annotations

import argparse
import sys

from deca.checks import params_from_args
from deca.params_args import add_params_arguments
from deca.errors import DownloadError
from pipelines.download import download, format_table

EPILOG = (
    "Each file is verified (sha256/md5 from the task registry, or the mirror's SHA256SUMS manifest when it\n"
    "has one), placed atomically and recorded in <raw-dir>/.verified.json; a re-run does nothing.\n"
    "Archives are extracted safely (no member may escape the target directory)."
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tasks", nargs="+", metavar="TASK",
                        help="task names, globs ('mrqa.*'), 'decanlp' (the ten) or 'all'; "
                             "comma- or space-separated (default: data.tasks in params.yaml)")
    parser.add_argument("--mirror", metavar="DIR", default=None,
                        help="copy from this local mirror (same relative paths as the raw directory, "
                             "e.g. ../shared/corpora) instead of downloading")
    parser.add_argument("--raw-dir", metavar="DIR", default=None,
                        help="where the raw files go (default: data.raw_dir in params.yaml, i.e. data/raw)")
    parser.add_argument("--continue-on-error", action="store_true",
                        help="go on after a failed file and report every failure at the end")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="S",
                        help="network timeout per request, seconds (default: %(default)s)")
    parser.add_argument("--retries", type=int, default=3, metavar="N",
                        help="retries of transient network errors per file (default: %(default)s)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_params_arguments(parser)


def run(args: argparse.Namespace) -> int:
    tasks, raw_dir, mirror = args.tasks, args.raw_dir, args.mirror
    if tasks is None or raw_dir is None or mirror is None:
        data = params_from_args(args).data
        tasks = tasks if tasks is not None else data.tasks
        raw_dir = raw_dir if raw_dir is not None else data.raw_dir
        mirror = mirror if mirror is not None else data.mirror
        if mirror:
            print(f"copying from the mirror {mirror} (data.mirror in {args.params}; --mirror DIR to change)",
                  file=sys.stderr)
    selectors = [s for item in tasks for s in item.replace(",", " ").split() if s]
    outcomes = download(selectors, raw_dir, mirror, continue_on_error=args.continue_on_error,
                        timeout=args.timeout, retries=args.retries, progress=not args.no_progress)
    print(format_table(outcomes))
    failed = [o for o in outcomes if o.action == "failed"]
    if failed:
        sys.stdout.flush()
        for o in failed:
            print(f"\nerror: {o.error}", file=sys.stderr)
        raise DownloadError(f"{len(failed)} of {len(outcomes)} files failed (see above)")
    return 0
