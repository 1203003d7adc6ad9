"""`python -m bench.faults`: see bench/faults/__init__.py."""
import sys

from bench.faults.cli import main

sys.exit(main())
