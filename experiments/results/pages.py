"""Every page of docs/results and how it is made: generated from records (`GENERATED`: page -> its module),
or not yet (`PENDING`: page -> why), so that a new page cannot appear without saying which it is; and the
README's results index (experiments/results/readme.py), which lists them all."""
from __future__ import annotations

import importlib

from experiments.results import readme, records
from experiments.results.render import fill, template

GENERATED = {
    "docs/results/table2.md": "experiments.results.table2",
    "docs/results/table3.md": "experiments.results.table3",
    "docs/results/zero_shot.md": "experiments.results.zero_shot",
    "docs/results/precision.md": "experiments.results.precision",
    "docs/results/figure3.md": "experiments.results.figure3",
    "docs/results/issue10.md": "experiments.results.issue10",
    "docs/results/glove_single_vs_joint.md": "experiments.results.glove",
    "docs/results/sst_single_task.md": "experiments.results.sst_single_task",
    "docs/results/transfer.md": "experiments.results.transfer",
    "docs/results/multitask.md": "experiments.results.multitask",
    "docs/results/gpu_floor.md": "experiments.results.gpu_floor",
    "docs/results/contamination.md": "experiments.results.contamination",
    "docs/results/speed.md": "experiments.results.speed",
    "docs/results/speedcheck_summary.md": "experiments.results.speedcheck_summary",
    "docs/results/reliability.md": "experiments.results.reliability",
    "docs/results/gpu.md": "experiments.results.gpu",
    "docs/results/scale.md": "experiments.results.scale",
    "docs/results/serve_fairness.md": "experiments.results.serve_fairness",
    # rendered by the module's render_page(page) from the record beside the page (<page>.json)
    "docs/results/profiles/lstm_paths.md": "experiments.results.lstm_paths",
    "docs/results/profiles/lstm_paths_intel_xeon.md": "experiments.results.lstm_paths",
}
PENDING: dict[str, str] = {}  # none now: every page is generated


def render(page: str) -> str:
    """The text of a generated page (or README.md) from its records."""
    if page == readme.README:
        return readme.render(readme.path().read_text(encoding="utf-8"), GENERATED)
    module = importlib.import_module(GENERATED[page])
    if hasattr(module, "render_page"):
        return module.render_page(page)
    return fill(template(module.TEMPLATE), module.values())


def documented() -> set[str]:
    """Every page (.md, .txt) of docs/results, relative to the repository."""
    return {p.relative_to(records.ROOT).as_posix() for p in records.RESULTS.glob("*")
            if p.suffix in (".md", ".txt")}


def differences(write: bool = False, names: tuple[str, ...] | None = None) -> list[str]:
    """The generated pages and README.md (or `names` of them) whose committed text differs from their
    records' (written when `write`)."""
    differ = []
    for page in names if names is not None else (*GENERATED, readme.README):
        path, text = records.ROOT / page, render(page)
        current = path.read_text(encoding="utf-8") if path.is_file() else None
        if current != text:
            differ.append(page)
            if write:
                path.write_text(text, encoding="utf-8")
    return differ


def unlisted() -> list[str]:
    """Pages of docs/results that are neither generated nor pending, or that the README index leaves out."""
    known = set(GENERATED) | set(PENDING)
    return sorted((documented() - known) | (documented() - readme.pages_indexed()))
