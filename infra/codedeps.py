"""The code a stage runs: the project's source files its entry modules import, directly or not.

Imports are read from the source (``ast``), including those inside functions, and resolved to files
of this repository; third-party modules are left out (their versions are pinned by constraints.txt).
``__init__.py`` files that hold no code (only a docstring) are left out too: changing them changes nothing.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Iterable

from deca.layout import PACKAGES

ROOT = Path(__file__).resolve().parents[1]


def module_file(name: str, root: Path = ROOT) -> Path | None:
    """The file of module `name` in the repository, or None (third-party, or not a module)."""
    if name.split(".")[0] not in PACKAGES:
        return None
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path = ROOT) -> set[str]:
    """Names of the repository modules `path` imports (``from a import b`` counts a and a.b)."""
    return {name for name in all_imports(path, root) if name.split(".")[0] in PACKAGES}


def all_imports(path: Path, root: Path = ROOT) -> set[str]:
    """Every module name `path` imports, the repository's and third-party ones, anywhere in the file
    (``from a import b`` counts a and a.b; relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module_name(path, root) if path.name == "__init__.py" else module_name(path, root).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _has_code(path: Path) -> bool:
    body = ast.parse(path.read_text(encoding="utf-8")).body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant):
        body = body[1:]
    return bool(body)


def closure(roots: Iterable[str], exclude: Iterable[str] = (), root: Path = ROOT) -> list[str]:
    """Repository files (relative, sorted) that the `roots` modules import, transitively.

    Modules in `exclude` are neither listed nor followed (a code path the stage does not take).
    """
    excluded = set(exclude)
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in excluded:
            continue
        path = module_file(name, root)
        if path is None or name in seen:
            continue
        seen[name] = path
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # parent packages run first
        todo.extend(imported_modules(path, root))
    files = {p for p in seen.values() if p.name != "__init__.py" or _has_code(p)}
    return sorted(p.relative_to(root).as_posix() for p in files)
