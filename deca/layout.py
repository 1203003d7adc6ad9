"""The project's packages, written out once: the production rooms that pyproject.toml installs, and the script
wing run from the repository root (`python -m bench.X`, `python -m experiments.X`). The import rules between
them are tests/test_layout.py's; every other list of the project's folders is taken from here (a test fails on
a second copy)."""
from __future__ import annotations

PRODUCTION = ("deca", "pipelines", "mqan", "train", "infer", "eval", "infra")
SCRIPTS = ("bench", "experiments")
PACKAGES = PRODUCTION + SCRIPTS
