"""The README stays a guide that cannot fall behind the tree: at most MAX_LINES lines; its code-layout section
names every package of deca/layout.py (as `name/`) and only files that exist; it names every stage of
dvc.yaml (a per-item stage as `name@<item>`)."""
from __future__ import annotations

import re

import yaml

from tests.conftest import ROOT

from deca.layout import PACKAGES

MAX_LINES = 290  # issue 43: a guide of about 280 lines
CUSTOM = re.compile(r"# BEGIN custom stages.*?# END custom stages", re.S)  # one per custom task, named by example


def readme() -> str:
    return (ROOT / "README.md").read_text(encoding="utf-8")


def layout_section(text: str) -> str:
    return text.split("## Code layout", 1)[1].split("\n## ", 1)[0]


def unnamed(section: str) -> list[str]:
    named = set(re.findall(r"`(\w+)/`", section))
    return sorted(p for p in PACKAGES if p not in named)


def stale(section: str) -> list[str]:
    """Files the section names that do not exist: a path where it gives one, else a file name anywhere in the
    packages or the tests."""
    files = {p.name for package in (*PACKAGES, "tests") for p in (ROOT / package).rglob("*.py")}
    names = set(re.findall(r"`([\w/]+\.py)`", section))
    return sorted(n for n in names if not ((ROOT / n).is_file() if "/" in n else n in files))


def stages(dvc_yaml: str) -> list[str]:
    """The stages of dvc.yaml, but the custom tasks' (params.yaml's own, one `prepare_<name>` each)."""
    return list(yaml.safe_load(CUSTOM.sub("", dvc_yaml))["stages"])


def unnamed_stages(text: str, names: list[str]) -> list[str]:
    return [s for s in names if f"`{s}`" not in text and f"`{s}@" not in text]


def test_the_readme_is_a_guide_of_at_most_290_lines():
    assert len(readme().splitlines()) <= MAX_LINES


def test_the_readme_names_every_stage_of_dvc_yaml():
    names = stages((ROOT / "dvc.yaml").read_text(encoding="utf-8"))
    assert {"validate", "download", "prepare", "vocab", "contamination", "train", "evaluate", "report"} <= set(names)
    assert unnamed_stages(readme(), names) == []


def test_the_code_layout_names_every_package_and_only_real_files():
    section = layout_section(readme())
    assert unnamed(section) == [] and stale(section) == []


def test_the_checks_see_a_missing_package_a_stale_file_and_an_unnamed_stage():
    section = layout_section(readme())
    assert unnamed(section.replace("`mqan/`", "mqan")) == ["mqan"]
    assert stale(section + " `gone.py` `mqan/gone.py` `mqan/batch.py`") == ["gone.py", "mqan/gone.py"]
    assert unnamed_stages("`vocab` then `download@<corpus>`", ["vocab", "download", "train"]) == ["train"]
    assert unnamed_stages("vocab, download@<corpus>, `training`", ["vocab", "download", "train"]) == [
        "vocab", "download", "train"]
    assert stages("stages:\n  a: {cmd: x}\n  # BEGIN custom stages\n  prepare_q: {cmd: y}\n  # END custom stages\n"
                  "  b: {cmd: z}\n") == ["a", "b"]
