"""The house rules of the code, as tests over the project's own import graph (infra/codedeps.py).

One table says which of the project's packages each package may import (its own modules always); within
the floor (deca) no module imports, even inside a function, one that imports it back (no cycle: deca.config
is plain data under the checks, the registry and the custom tasks); ray and mlflow are imported only by the
files listed below; no production function is over 60 lines. The scripts import one way (issue 43):
experiments/ -> bench/ -> the production packages, never back, and neither imports tests/ (the fixtures the tests
share are tests/support.py; no script uses them). No rule names an exception for a file: a file that needs
another edge belongs in another package.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from deca.layout import PACKAGES, PRODUCTION, SCRIPTS
from infra.codedeps import ROOT, all_imports, module_file, module_name

# package -> the project packages it may import. deca is the floor (config, registry, text, the run folder);
# the model, training and using a model stand side by side above it. train may read eval's metrics (validation
# scores with the official ones); infra (stage generation, `deca validate`) checks params against the schedule
# , the metrics and the word vectors. The scripts stand above them, one way: experiments/ may import bench/,
# bench/ only the production packages; nothing imports them but the tests, and neither imports tests/.
LAYERS = {
    "deca": set(),
    "eval": {"deca"},
    "pipelines": {"deca"},
    "mqan": {"deca"},
    "train": {"deca", "mqan", "eval", "pipelines"},
    "infer": {"deca", "mqan", "eval"},
    "infra": {"deca", "eval", "mqan", "train"},
    "bench": {*PRODUCTION},
    "experiments": {*PRODUCTION, "bench"},
}
MAX_FUNCTION_LINES = 60

# The only files that may import ray / mlflow (directly, anywhere in the file).
RAY_FILES = {"train/driver.py", "train/ray_session.py", "train/worker.py", "train/progress.py", "train/local_mode.py",
             "infer/serve/ray_app.py"}
MLFLOW_FILES = {"deca/metric_logging.py", "eval/compare.py", "train/tracking.py", "infer/mlflow_model.py", "infer/model_uri.py",
                "infer/mlflow_entry.py", "infer/mlflow_errors.py", "infer/registry.py", "infer/registry_webhook.py"}


def files(*folders: str, root: Path = ROOT) -> list[Path]:
    return sorted(p for folder in folders for p in (root / folder).rglob("*.py"))


def offending(paths: list[Path], forbidden, root: Path = ROOT) -> dict[str, list[str]]:
    """{file: its imports that `forbidden(name)` refuses}, for the files that have any."""
    found = {}
    for path in paths:
        bad = sorted(name for name in all_imports(path, root) if forbidden(name))
        if bad:
            found[path.relative_to(root).as_posix()] = bad
    return found


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def layer_breaches(package: str, root: Path = ROOT) -> dict[str, list[str]]:
    """{file of `package`: the project modules it imports that LAYERS does not allow}."""
    others = set(LAYERS) | {"tests"}
    allowed = LAYERS[package] | {package}
    return offending(files(package, root=root), lambda n: n.split(".")[0] in others - allowed, root)


@pytest.mark.parametrize("package", sorted(LAYERS))
def test_each_package_imports_only_what_the_table_allows(package):
    assert layer_breaches(package) == {}


def test_nothing_of_the_project_imports_bench_or_experiments():
    assert offending(files(*PRODUCTION), lambda n: under(n, "bench", "experiments")) == {}


def one_way_breaches(root: Path = ROOT) -> dict[str, list[str]]:
    """{file of bench/ or experiments/: its imports of tests/, and for bench/ of experiments/ too}: the edges that
    would run the scripts' one way back (experiments/ -> bench/ -> production), as LAYERS forbids them."""
    found = {}
    for package in SCRIPTS:
        back = {"tests", *SCRIPTS} - LAYERS[package] - {package}
        found.update(offending(files(package, root=root), lambda n, back=back: n.split(".")[0] in back, root))
    return found


def test_the_scripts_import_one_way():
    """Issue 43: neither bench/ nor experiments/ imports tests/, and bench/ never imports experiments/
    (experiments/ may import bench/)."""
    assert one_way_breaches() == {}


def test_the_one_way_check_can_fail(tmp_path):
    """A script that imports tests/, or a bench module that imports experiments/, even inside a function, is
    seen; experiments/ importing bench/ is not."""
    lines = {"bench/untrusted.py": "def f():\n    from tests.payloads import Planted\n",
             "bench/gpu_pack.py": "def f():\n    from experiments import workdir\n",
             "experiments/runs.py": "import tests.eval.helpers\nfrom bench.record import commit\n",
             "experiments/ok.py": "from bench.record import commit\nimport bench.workdir\n"}
    for rel, text in lines.items():
        (tmp_path / rel).parent.mkdir(exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert one_way_breaches(tmp_path) == {"bench/gpu_pack.py": ["experiments", "experiments.workdir"],
                                          "bench/untrusted.py": ["tests.payloads", "tests.payloads.Planted"],
                                          "experiments/runs.py": ["tests.eval.helpers"]}


def test_the_table_covers_every_package_of_the_tree():
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests"}
    assert packages == set(LAYERS) == set(PACKAGES)


def test_pyproject_installs_the_production_packages_without_listing_them():
    import tomllib

    from setuptools import find_packages

    found = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"]
    assert "include" not in found["find"]
    assert {p.split(".")[0] for p in find_packages(str(ROOT), exclude=found["find"]["exclude"])} == set(PRODUCTION)


def package_lists(path: Path) -> list[int]:
    """Lines of `path` where a literal tuple, list or set names every production package (folder names with or
    without a trailing / count): the package list written out again."""
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            items = {e.value.rstrip("/*") for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
            if set(PRODUCTION) <= items:
                names.append(node.lineno)
    return names


def test_the_package_list_is_written_once():
    found = {p.relative_to(ROOT).as_posix(): package_lists(p) for p in [*files(*PACKAGES), *ROOT.glob("tests/**/*.py")]}
    assert {f: lines for f, lines in found.items() if lines} == {"deca/layout.py": [7]}


def test_the_package_list_check_can_fail(tmp_path):
    copy = tmp_path / "lineage.py"
    copy.write_text('CODE = ("deca/", "pipelines/", "mqan/", "train/", "infer/", "eval/", "infra/", "bench/")\n')
    assert package_lists(copy) == [1]


@pytest.mark.parametrize("package, allowed", [("ray", RAY_FILES), ("mlflow", MLFLOW_FILES)])
def test_ray_and_mlflow_only_where_listed(package, allowed):
    users = set(offending(files(*PRODUCTION), lambda n: under(n, package)))
    assert users == allowed, f"{package} imported by {sorted(users - allowed)}; listed but unused {sorted(allowed - users)}"


def long_functions(paths: list[Path], limit: int = MAX_FUNCTION_LINES, root: Path = ROOT) -> list[str]:
    """'file:line name (n lines)' of every function longer than `limit` lines (docstring included)."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({n} lines)")
    return found


def test_every_production_function_is_under_60_lines():
    assert long_functions(files(*PRODUCTION)) == []


def test_every_script_function_is_under_60_lines():
    assert long_functions(files(*SCRIPTS)) == []


def path_edits(paths: list[Path], root: Path = ROOT) -> list[str]:
    """'file:line' of every call that edits the import path (`sys.path.insert(...)`, `sys.path.append(...)`,
    `sys.path.extend(...)`, `sys.path[...] = ...`, `sys.path = ...`), and of every shell line that runs
    a script of bench/ or experiments/ by its path (`python bench/x.py`, which `python -m bench.x` replaces)."""
    found = []
    for path in paths:
        rel = path.relative_to(root).as_posix()
        if path.suffix == ".sh":
            found += [f"{rel}:{n}" for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
                      if "sys.path" in line or re.search(r"(bench|experiments)/\w+\.py\b", line.split("#")[0])]
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, (ast.AugAssign, ast.AnnAssign)) else []
            edited = [t.value if isinstance(t, ast.Subscript) else t for t in targets]
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                edited.append(node.func.value)
            if any(ast.unparse(e) == "sys.path" for e in edited):
                found.append(f"{rel}:{node.lineno}")
    return found


def script_files(root: Path = ROOT) -> list[Path]:
    return sorted(p for folder in SCRIPTS for ext in ("*.py", "*.sh") for p in (root / folder).rglob(ext))


def test_no_script_edits_sys_path():
    """bench/ and experiments/ are packages: their modules import each other absolutely (`from
    bench.workdir import prepare`) and run with `python -m`, never by putting a folder on sys.path."""
    assert path_edits(script_files()) == []


@pytest.mark.parametrize("package, breach", [
    ("mqan", "from train.recipe import Recipe"), ("mqan", "import infer.predict"), ("train", "import infer.serve"),
    ("infer", "from train.driver import fit"), ("eval", "from mqan.model import MQAN"),
    ("pipelines", "import train"), ("deca", "from mqan.vocab import Vocab"), ("deca", "import eval.api"),
    ("infra", "import bench.model"), ("bench", "from tests.payloads import Planted"), ("bench", "import tests"),
    ("bench", "from experiments.workdir import prepare"), ("bench", "from experiments import workdir"),
    ("experiments", "from tests.mqan.test_model import tiny_model"), ("experiments", "import tests.eval.helpers"),
])
def test_each_rule_can_fail(tmp_path, package, breach):
    """Every edge the table forbids is seen: a file in a scratch tree with the forbidden import is caught."""
    (tmp_path / package).mkdir()
    (tmp_path / package / "sample.py").write_text(f"def f():\n    {breach}\n", encoding="utf-8")
    assert list(layer_breaches(package, root=tmp_path)) == [f"{package}/sample.py"]


def test_the_checks_can_fail(tmp_path):
    """The rules see what they look for: a long function, a function-level import, a relative import."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "sample.py"
    path.write_text(f"def f():\n    import ray.train\n{body}\n", encoding="utf-8")
    assert len(long_functions([path], root=tmp_path)) == 1 and "ray.train" in all_imports(path, tmp_path)
    rel = ROOT / "mqan" / "model.py"
    assert "mqan.mixture" in all_imports(rel) and module_name(rel) == "mqan.model"


@pytest.mark.parametrize("line", [
    "sys.path.insert(0, str(ROOT))", "sys.path.append('experiments')", "sys.path[:0] = [str(ROOT)]",
    "sys.path = ['.'] + sys.path", "sys.path += ['bench']",
])
def test_the_sys_path_check_can_fail(tmp_path, line):
    """A script that edits sys.path, inside a function or at the top, is seen; reading it is not an edit."""
    (tmp_path / "bench").mkdir()
    path = tmp_path / "bench" / "sample.py"
    path.write_text(f"import sys\nprint(sys.path)\n\ndef f():\n    {line}\n", encoding="utf-8")
    assert path_edits(script_files(tmp_path), tmp_path) == ["bench/sample.py:5"]


def test_the_shell_check_can_fail(tmp_path):
    """A shell script that runs a script by its path, or puts a folder on sys.path, is seen; `-m` is not."""
    (tmp_path / "experiments").mkdir()
    path = tmp_path / "experiments" / "sample.sh"
    path.write_text("$PY -m experiments.table2_report out  # was experiments/table2_report.py\n"
                    "$PY experiments/table2_report.py out\n"
                    "python3 -c \"import sys; sys.path.insert(0, 'experiments')\"\n", encoding="utf-8")
    assert path_edits(script_files(tmp_path), tmp_path) == ["experiments/sample.sh:2", "experiments/sample.sh:3"]


def import_graph(package: str, root: Path = ROOT) -> dict[str, set[str]]:
    """{module of `package`: the modules of `package` it imports, anywhere in the file (inside functions too)}."""
    graph = {}
    for path in files(package, root=root):
        name = module_name(path, root)
        graph[name] = {n for n in all_imports(path, root)
                       if under(n, package) and n != name and module_file(n, root) is not None}
    return graph


def import_cycles(package: str, root: Path = ROOT) -> list[list[str]]:
    """The import cycles among the modules of `package`: each a sorted group of modules that import one another,
    directly or not (the strongly connected components of import_graph with more than one module)."""
    graph = import_graph(package, root)
    reach = {m: set() for m in graph}
    for start in graph:  # a few dozen modules: a search from each is plenty
        todo = list(graph[start])
        while todo:
            m = todo.pop()
            if m not in reach[start] and m in graph:
                reach[start].add(m)
                todo.extend(graph[m])
    groups = {tuple(sorted({m} | {o for o in reach[m] if m in reach[o]})) for m in graph}
    return sorted(list(g) for g in groups if len(g) > 1)


def test_the_table_has_no_circle():
    """Each package's imports lead only down: following the table from any package never comes back to it."""
    for start in LAYERS:
        seen, todo = set(), list(LAYERS[start])
        while todo:
            name = todo.pop()
            assert name != start, f"{start} reaches itself through the table"
            if name not in seen:
                seen.add(name)
                todo.extend(LAYERS[name])


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle_inside_a_package(package):
    """Between packages the table has no circle (above); inside each none either, even through a function-level
    import or a package's __init__."""
    assert import_cycles(package) == []


def test_deca_config_is_plain_data_under_the_checks():
    """deca is the floor and is layered within: config (plain data) under checks, registry and custom tasks."""
    assert not {"deca.checks", "deca.registry", "deca.custom_tasks"} & import_graph("deca")["deca.config"]


def test_an_import_cycle_is_seen_even_through_a_function_level_import(tmp_path):
    (tmp_path / "deca").mkdir()
    (tmp_path / "deca" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "deca" / "config.py").write_text("def load():\n    from deca.checks import check\n", encoding="utf-8")
    (tmp_path / "deca" / "checks.py").write_text("import deca.errors\nfrom deca.config import load\n", encoding="utf-8")
    (tmp_path / "deca" / "errors.py").write_text("from deca import config\n", encoding="utf-8")
    (tmp_path / "deca" / "text.py").write_text("import deca.errors\n", encoding="utf-8")
    assert import_cycles("deca", root=tmp_path) == [["deca.checks", "deca.config", "deca.errors"]]
