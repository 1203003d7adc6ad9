"""`python -m experiments.results` (= `make results`): regenerate every generated results page and the
README's results section from their records; `--check`: write nothing, exit 1 naming each that differs."""
from __future__ import annotations

import argparse
import sys

from experiments.results import pages


def main(argv: list[str] | None = None) -> int:
    """Regenerate (or with --check compare) the results pages."""
    ap = argparse.ArgumentParser(prog="python -m experiments.results", description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare only; exit 1 when a page differs")
    args = ap.parse_args(argv)
    stray = pages.unlisted()
    if stray:
        print(f"error: pages neither generated nor listed in experiments/results/pages.py: {', '.join(stray)}",
              file=sys.stderr)
        return 1
    differ = pages.differences(write=not args.check)
    for page in differ:
        print(f"{'differs from its records' if args.check else 'wrote'}: {page}")
    if args.check and differ:
        print("run `make results` and commit the pages", file=sys.stderr)
        return 1
    print(f"{len(pages.GENERATED)} pages generated, {len(pages.PENDING)} pending", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
