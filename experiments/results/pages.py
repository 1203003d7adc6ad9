"""Every page of docs/results and how it is made: generated from records (`GENERATED`: page -> its module),
or not yet (`PENDING`: page -> why), so that a new page cannot appear without saying which it is."""
from __future__ import annotations

import importlib
from pathlib import Path

from experiments.results import records
from experiments.results.render import fill, template

GENERATED = {
    "docs/results/table2.md": "experiments.results.table2",
    "docs/results/table3.md": "experiments.results.table3",
    "docs/results/zero_shot.md": "experiments.results.zero_shot",
}
PENDING = {}


def render(page: str) -> str:
    """The text of a generated page from its records."""
    module = importlib.import_module(GENERATED[page])
    return fill(template(module.TEMPLATE), module.values())


def documented() -> set[str]:
    """Every page (.md, .txt) of docs/results, relative to the repository."""
    return {p.relative_to(records.ROOT).as_posix() for p in records.RESULTS.glob("*")
            if p.suffix in (".md", ".txt")}


def differences(write: bool = False) -> list[str]:
    """The generated pages whose committed text differs from their records' (written when `write`)."""
    differ = []
    for page in GENERATED:
        path, text = records.ROOT / page, render(page)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != text:
            differ.append(page)
            if write:
                path.write_text(text, encoding="utf-8")
    return differ


def unlisted() -> list[str]:
    """Pages of docs/results neither generated nor listed as pending."""
    return sorted(documented() - set(GENERATED) - set(PENDING))


def page_path(page: str) -> Path:
    return records.ROOT / page
