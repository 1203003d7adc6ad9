"""Every Markdown table of every generated page (and README.md) renders: each row has as many cells as its
header and its delimiter row."""
from __future__ import annotations

import re

import pytest

from experiments.results import pages, readme
from experiments.results.render import table

DELIMITER = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+$")


def cells(line: str) -> int:
    """The cells of a table row (a '|' escaped as '\\|' or inside `code` is no separator)."""
    line = re.sub(r"`[^`]*`", "", line.replace("\\|", "")).strip()
    return line.strip("|").count("|") + 1


def tables(text: str) -> list[list[str]]:
    """Each table block: a header line followed by a delimiter line, then its '|' rows."""
    lines, found = text.splitlines(), []
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and DELIMITER.match(lines[i + 1].strip()):
            block = [lines[i], lines[i + 1]]
            for line in lines[i + 2:]:
                if not line.startswith("|"):
                    break
                block.append(line)
            found.append(block)
    return found


def bad_rows(text: str) -> list[str]:
    """Rows whose cell count differs from their table's header."""
    return [row for block in tables(text) for row in block[1:] if cells(row) != cells(block[0])]


@pytest.mark.parametrize("page", [*pages.GENERATED, readme.README])
def test_every_table_renders(page):
    text = pages.render(page)
    assert bad_rows(text) == [], f"{page}: rows not as wide as the header"


def test_a_short_delimiter_is_caught():
    text = table(["a", "b", "c"], [[1, 2, 3]], "lrrr")
    assert bad_rows(text)
