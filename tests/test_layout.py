"""The house rules of the code, as tests over the project's own import graph (infra/codedeps.py).

- train/mqan (the model) imports nothing of training, inference, ray, mlflow or eval;
- train/infer (using a trained model) imports no training module: from train/ only train.mqan and the
  run-folder contract train.runs;
- training (train/*.py) never imports inference;
- eval/ and pipelines/ never import train/;
- ray and mlflow are imported only by the files listed here;
- every production function is under 60 lines.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from infra.codedeps import ROOT, all_imports, module_name

PRODUCTION = ("deca", "pipelines", "train", "eval", "infra")
MAX_FUNCTION_LINES = 60

# The only files that may import ray / mlflow (directly, anywhere in the file).
RAY_FILES = {"train/driver.py", "train/worker.py", "train/progress.py", "train/infer/serve/ray_app.py"}
MLFLOW_FILES = {"deca/metric_logging.py", "eval/compare.py", "train/tracking.py", "train/infer/mlflow_model.py",
                "train/infer/mlflow_entry.py", "train/infer/registry.py"}


def files(*folders: str) -> list[Path]:
    return sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))


def imports(path: Path) -> set[str]:
    return all_imports(path)


def offending(paths: list[Path], forbidden) -> dict[str, list[str]]:
    """{file: its imports that `forbidden(name)` refuses}, for the files that have any."""
    found = {}
    for path in paths:
        bad = sorted(name for name in imports(path) if forbidden(name))
        if bad:
            found[path.relative_to(ROOT).as_posix()] = bad
    return found


def under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def is_training(name: str) -> bool:
    """A module of train/ itself (the recipe, its driver and bookkeeping), not of train/mqan or train/infer."""
    return under(name, "train") and not under(name, "train.mqan", "train.infer") and name != "train"


def test_the_model_imports_nothing_of_training_inference_ray_mlflow_or_eval():
    bad = offending(files("train/mqan"), lambda n: is_training(n) or under(n, "train.infer", "ray", "mlflow", "eval"))
    assert bad == {}


def test_inference_imports_no_training_module_but_the_run_folder():
    bad = offending(files("train/infer"), lambda n: is_training(n) and not under(n, "train.runs"))
    assert bad == {}


def test_training_never_imports_inference():
    training = [p for p in files("train") if not {"mqan", "infer"} & set(p.relative_to(ROOT / "train").parts)]
    assert training and offending(training, lambda n: under(n, "train.infer")) == {}


def test_eval_and_pipelines_never_import_train():
    assert offending(files("eval", "pipelines"), lambda n: under(n, "train")) == {}


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


def test_the_checks_can_fail(tmp_path):
    """The rules see what they look for: a long function, a function-level import, a relative import."""
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    path = tmp_path / "sample.py"
    path.write_text(f"def f():\n    import ray.train\n{body}\n", encoding="utf-8")
    assert len(long_functions([path], root=tmp_path)) == 1 and "ray.train" in all_imports(path, tmp_path)
    rel = ROOT / "train" / "mqan" / "model.py"
    assert "train.mqan.mixture" in imports(rel) and module_name(rel) == "train.mqan.model"
