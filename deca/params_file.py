"""Reading a params file (params.yaml, an overlay) as YAML, within bounds: its size before anything is parsed,
the expansion of its aliases before they are expanded, its nesting; and where each key stands (dotted key ->
line), so that an error can name the file and line of the value it is about. deca/config.py turns what is
read into typed Params.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from deca.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads YAML 1.2 floats such as ``1e-09`` (PyYAML's YAML 1.1 reads them as strings;
    `dvc exp run -S train.eps=1e-9` writes that form)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)



# A params document has a few hundred nodes; aliases (&a / *a) that expand past this are a "billion laughs".
MAX_YAML_NODES = 100_000
# params.yaml is ~9 KB; PyYAML, run twice on a read (values, then lines), took minutes over a 50 MB file.
MAX_PARAMS_BYTES = 256 * 1024


def read_params_text(path: str | Path) -> str:
    """The text of a params file (params.yaml, an overlay); ConfigError, before anything is parsed, when it is
    over MAX_PARAMS_BYTES (at most that much is read) or not UTF-8."""
    path = Path(path)
    with open(path, "rb") as handle:
        data = handle.read(MAX_PARAMS_BYTES + 1)
    if len(data) > MAX_PARAMS_BYTES:
        raise ConfigError(f"{path}: refused: {path.stat().st_size:,} bytes, over the {MAX_PARAMS_BYTES:,} a params "
                          "file may hold (deca.params_file.MAX_PARAMS_BYTES); keep settings in it, and data in files "
                          "that a setting names")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def load_params_file(path: str | Path) -> Any:
    """A params file read (read_params_text: size first) and parsed with parse_yaml's bounds: what every reader
    of params.yaml or an overlay uses, and what `make run` runs before DVC reads params.yaml (infra/repro.py)."""
    return parse_yaml(read_params_text(path), path)


def parse_yaml(text: str, where: str | Path) -> Any:
    """A params document (YAML 1.2 floats such as ``1e-09`` read as numbers); ConfigError when it does not
    parse, nests too deeply, or its aliases expand past MAX_YAML_NODES (checked on the composed nodes, before
    anything is expanded: time and memory stay bounded)."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        check_expansion(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be params") from None
    finally:
        loader.dispose()


def compose_yaml(text: str, where: str | Path) -> yaml.Node | None:
    """The node graph of a YAML document (aliases not expanded), checked as `parse_yaml` checks it."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {exc}") from exc
    except RecursionError:
        raise ConfigError(f"{where}: nested too deeply to be params") from None
    if node is not None:
        check_expansion(node, where)
    return node


def check_expansion(root: yaml.Node, where: str | Path, limit: int = MAX_YAML_NODES) -> None:
    """ConfigError when the document under `root` would be more than `limit` nodes once its aliases are
    expanded, or is recursive (an alias inside its own anchor). Each shared node is counted once (memoized),
    so a bomb is refused in time proportional to its text."""
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        kids = _yaml_children(node)
        if done:
            open_.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(k)] for k in kids)
            if sizes[id(node)] > limit:
                raise ConfigError(f"{where}:{node.start_mark.line + 1}: refused: its aliases (&name / *name) "
                                  f"expand to more than {limit:,} values; write the values out instead")
        elif id(node) in open_:
            raise ConfigError(f"{where}:{node.start_mark.line + 1}: refused: an alias inside its own anchor "
                              "(a recursive document)")
        elif id(node) not in sizes:
            open_.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in sizes)


def _yaml_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def key_lines(text: str) -> dict[str, int]:
    """Dotted key -> line (from 1) of each mapping key in a YAML document (empty if it does not parse, or is
    refused by parse_yaml's bounds, which also say why)."""
    try:
        root = compose_yaml(text, "")
    except ConfigError:
        return {}
    lines: dict[str, int] = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                dotted = f"{prefix}{key.value}"
                lines[dotted] = key.start_mark.line + 1
                walk(value, dotted + ".")

    walk(root, "")
    return lines
