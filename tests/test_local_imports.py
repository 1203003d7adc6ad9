"""Function-local imports in the production packages only where they pay (issue 43, item 3).

An import inside a function hides a module's dependencies from its reader and is repeated from function to
function; it stays there only (a) when it loads a heavy third-party dependency (HEAVY: directly, through the
top-level imports of the project modules it names, or through what a third-party module brings, THIRD_PARTY) that
the module's own top level does not load already, so that importing the module stays cheap, or (b) when the import
line, or the comment line directly above it, says why (an import circle otherwise, a path taken only with one
option). Every other import belongs in the module's top import block.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from deca.layout import PACKAGES, PRODUCTION
from infra.codedeps import ROOT, module_file, module_name

# Seconds each adds to a bare interpreter's start (measured on the development machine, 2 cores): an import of
# about 0.25 s or more is worth deferring to the function that needs it; cheaper ones (tqdm 0.18, requests 0.2,
# revtok 0.17, ruamel.yaml 0.1) are not. A name covers its submodules (pyarrow covers pyarrow.parquet);
# pyarrow.dataset is 0.3 s over pyarrow (it loads pandas).
HEAVY = {"torch": 2.3, "mlflow": 2.7, "nltk": 3.4, "apache_beam": 1.8, "matplotlib.pyplot": 1.0, "ray": 0.85,
         "pandas": 0.8, "distributed": 0.7, "dvc.repo": 0.56, "fastapi": 0.55, "scipy": 0.4, "pyarrow": 0.3,
         "pyarrow.dataset": 0.3, "numpy": 0.3, "sacrebleu": 0.3, "dask": 0.26, "uvicorn": 0.26}

# What importing a third-party module loads of HEAVY besides itself and its parent packages, as measured in a fresh
# interpreter (test_third_party_loads_as_written checks it): `import matplotlib` is light but brings numpy.
THIRD_PARTY = {"matplotlib": ("numpy",), "pyarrow": ("numpy",), "pyarrow.dataset": ("pandas",), "pandas": ("pyarrow",),
               "scipy": ("numpy",), "torch": ("numpy",), "nltk": ("pandas", "scipy"), "distributed": ("dask", "numpy"),
               "apache_beam": ("pandas",), "mlflow": ("pandas", "fastapi", "scipy"), "ray.train": ("pandas",),
               "ray.train.torch": ("torch",)}

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def names(node: ast.Import | ast.ImportFrom, path: Path, root: Path) -> set[str]:
    """The module names one import statement of `path` names (``from a import b`` counts a and a.b; relative
    imports resolved), as infra/codedeps.py's all_imports counts them for a whole file."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    base = node.module or ""
    if node.level:
        own = module_name(path, root)
        parts = (own if path.name == "__init__.py" else own.rpartition(".")[0]).split(".")
        parts = parts[: len(parts) - (node.level - 1)]
        base = ".".join(parts + ([base] if base else []))
    return {base} | {f"{base}.{alias.name}" for alias in node.names}


def type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) in {"TYPE_CHECKING", "typing.TYPE_CHECKING"}


def split_imports(path: Path) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """(the imports `path` runs when it is imported, those inside its functions); imports under
    `if TYPE_CHECKING:` run in neither."""
    top, local = [], []

    def visit(node: ast.AST, in_function: bool) -> None:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            (local if in_function else top).append(node)
        for child in ast.iter_child_nodes(node):
            if not type_checking_only(child):
                visit(child, in_function or isinstance(node, FUNCTIONS))

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), False)
    return top, local


def heavy_names(name: str) -> set[str]:
    return {h for h in HEAVY if name == h or name.startswith(h + ".")}


def loads(name: str, root: Path = ROOT) -> frozenset[str]:
    """The HEAVY dependencies that importing module `name` loads: its own, through the top-level imports of the
    project's modules, and what THIRD_PARTY says third-party ones bring (parent packages included)."""
    seen, todo, found = set(), [name], set()
    while todo:
        current = todo.pop()
        if current not in seen:
            seen.add(current)
            found |= heavy_names(current)
            todo.extend(runs_on_import(current, root))
    return frozenset(found)


@cache
def runs_on_import(name: str, root: Path) -> frozenset[str]:
    """The modules importing `name` imports too: its parent packages, and a project module's top-level imports
    (a third-party one's THIRD_PARTY)."""
    parts = name.split(".")
    parents = {".".join(parts[:i]) for i in range(1, len(parts))}
    path = module_file(name, root)
    if path is None:
        return frozenset(parents | set(THIRD_PARTY.get(name, ())))
    return frozenset(parents | {n for node in split_imports(path)[0] for n in names(node, path, root)})


def says_why(lines: list[str], node: ast.stmt) -> bool:
    """The import's own lines carry a comment, or the line directly above it is one."""
    own = lines[node.lineno - 1: node.end_lineno]
    return any("#" in line for line in own) or (node.lineno > 1 and lines[node.lineno - 2].lstrip().startswith("#"))


def unjustified(root: Path = ROOT) -> list[str]:
    """'file:line: import' of every function-level import of the production packages that
    loads nothing heavy the module's top level does not load already and says nothing of why it is local."""
    found = []
    for path in sorted(p for package in PRODUCTION for p in (root / package).rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        lines = path.read_text(encoding="utf-8").splitlines()
        already = loads(module_name(path, root), root)
        for node in split_imports(path)[1]:
            extra = set().union(*(loads(n, root) for n in names(node, path, root))) - already
            if not extra and not says_why(lines, node):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_function_level_imports_only_where_they_pay():
    bad = unjustified()
    assert bad == [], ("move these to the module's top import block, or say on the line (or the comment line above "
                       "it) why they stay in the function:\n" + "\n".join(bad))


def locally_imported_third_party(root: Path = ROOT) -> set[str]:
    """The third-party modules imported inside a function of the production packages."""
    found = set()
    for path in (p for package in PRODUCTION for p in (root / package).rglob("*.py")):
        for node in split_imports(path)[1]:
            found |= {node.module} if isinstance(node, ast.ImportFrom) else {a.name for a in node.names}
    return {n for n in found if n and n.split(".")[0] not in {*PACKAGES, *sys.stdlib_module_names}}


@pytest.mark.slow
def test_third_party_loads_as_written():
    """What each heavy module, each module of THIRD_PARTY and each third-party module a production function imports
    loads of HEAVY, in a fresh interpreter, is what loads() assumes (THIRD_PARTY is current)."""
    probe = "import importlib, json, sys; importlib.import_module(sys.argv[1]); print(json.dumps(sorted(sys.modules)))"
    wrong = {}
    for name in sorted({*HEAVY, *THIRD_PARTY, *locally_imported_third_party()}):
        out = subprocess.run([sys.executable, "-c", probe, name], capture_output=True, text=True, check=True).stdout
        loaded = set(json.loads(out.splitlines()[-1]))
        if {h for h in HEAVY if h in loaded} != loads(name):
            wrong[name] = sorted(h for h in HEAVY if h in loaded)
    assert wrong == {}, f"THIRD_PARTY is out of date; these load: {wrong}"


def test_the_rule_can_fail(tmp_path):
    """In a planted tree: a gratuitous local import is seen; one loading a heavy module the top level does not
    (directly or through a project module), or one that says why, is not."""
    tree = {
        "deca/__init__.py": "",
        "deca/model.py": "import torch\n",
        "deca/numbers.py": "import numpy as np\nimport matplotlib\n\nX = np.zeros(1)\n",
        "deca/user.py": (
            "import json\n"
            "from deca import numbers\n"
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n"
            "    import torch\n"
            "\n"
            "def gratuitous():\n"
            "    import re\n"
            "    return re\n"
            "\n"
            "def numpy_again():\n"
            "    from numpy import dtypes\n"
            "    import matplotlib.colors\n"
            "\n"
            "def heavy():\n"
            "    import torch\n"
            "    from deca.model import torch as t\n"
            "    import matplotlib.pyplot as plt\n"
            "\n"
            "def said():\n"
            "    import csv  # only with --csv\n"
            "    # a circle otherwise: deca.numbers imports this module\n"
            "    from deca.numbers import X\n"
            "    class Inner:\n"
            "        def method(self):\n"
            "            import json\n"
        ),
    }
    for rel, text in tree.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert loads("deca.user", tmp_path) == {"numpy"}
    assert unjustified(tmp_path) == [
        "deca/user.py:8: import re", "deca/user.py:12: from numpy import dtypes",
        "deca/user.py:13: import matplotlib.colors", "deca/user.py:26: import json"]


def test_the_rule_follows_what_third_party_modules_load(tmp_path):
    """`import matplotlib` is light but brings numpy, pyarrow.dataset brings pandas: local where the top level
    does not load those already, gratuitous where it does."""
    (tmp_path / "deca").mkdir()
    (tmp_path / "deca" / "plain.py").write_text("import os\n\ndef plot():\n    import matplotlib\n", encoding="utf-8")
    (tmp_path / "deca" / "arrow.py").write_text(
        "import pyarrow\n\ndef f():\n    import pyarrow.parquet\n    import pyarrow.dataset\n    import matplotlib\n",
        encoding="utf-8")
    assert loads("deca.arrow", tmp_path) == {"pyarrow", "numpy"}
    assert unjustified(tmp_path) == ["deca/arrow.py:4: import pyarrow.parquet", "deca/arrow.py:6: import matplotlib"]
