"""The README's code-layout section cannot fall behind the tree: it names every module of every package (a
subfolder by its name, e.g. `tasks/`), and every file it names exists there."""
from __future__ import annotations

import re

from tests.conftest import ROOT

from deca.layout import PRODUCTION as PACKAGES


def layout_section(text: str) -> str:
    return text.split("## Code layout", 1)[1].split("\n## ", 1)[0]


def modules(package: str) -> set[str]:
    """Each top-level module file of `package`, and each subfolder as `name/`."""
    folder = ROOT / package
    files = {p.name for p in folder.glob("*.py") if p.name != "__init__.py"}
    return files | {f"{p.parent.name}/" for p in folder.glob("*/__init__.py")}


def unnamed(section: str) -> list[str]:
    named = set(re.findall(r"`([\w/]+(?:\.py|/))`", section))
    return sorted(f"{p}/{m}" for p in PACKAGES for m in modules(p) if m not in named)


def stale(section: str) -> list[str]:
    files = {p.name for package in (*PACKAGES, "tests", "bench", "experiments") for p in (ROOT / package).rglob("*.py")}
    return sorted(n for n in set(re.findall(r"`(\w+\.py)`", section)) if n not in files)


def test_the_code_layout_names_every_module_and_only_real_ones():
    section = layout_section((ROOT / "README.md").read_text(encoding="utf-8"))
    assert unnamed(section) == [] and stale(section) == []


def test_the_check_sees_a_missing_and_a_stale_name():
    section = layout_section((ROOT / "README.md").read_text(encoding="utf-8"))
    assert unnamed(section.replace("`runs.py`", "runs")) == ["deca/runs.py"]
    assert stale(section + " `gone.py`") == ["gone.py"]
