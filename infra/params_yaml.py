"""params.yaml updated in place: a mapping of params merged into it, its comments and layout kept (a ruamel
round trip), for params overlays (infra/overlay.py) and the task options infra/stages.py adds."""
from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any, Mapping

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from deca.io import write_text


def write(params_path: str | Path, combined: Mapping[str, Any]) -> None:
    """Merge `combined` (params sections; see infra.overlay.merge for the rules) into params.yaml in place, keeping
    its comments and layout (ruamel round trip).

    Floats are written with a decimal point (1.0e-09, not 1e-09): YAML 1.1 readers such as PyYAML,
    which deca.config uses, read '1e-09' as a string. (DVC's `-S` writes the short form.)
    """

    yaml_rt = YAML()
    yaml_rt.preserve_quotes = True
    yaml_rt.width = 4096
    yaml_rt.representer.add_representer(float, _represent_float)
    yaml_rt.representer.add_representer(type(None), lambda r, _: r.represent_scalar("tag:yaml.org,2002:null", "null"))
    path = Path(params_path)
    doc = yaml_rt.load(path.read_text(encoding="utf-8")) or CommentedMap()
    _merge_into(doc, combined)
    text = io.StringIO()
    yaml_rt.dump(doc, text)
    write_text(path, text.getvalue())


def _merge_into(doc: Any, overlay: Mapping[str, Any]) -> None:

    for key, value in overlay.items():
        if isinstance(value, Mapping) and value and isinstance(doc.get(key), Mapping):
            _merge_into(doc[key], value)
        else:
            doc[key] = _flow(copy.deepcopy(value))


def _flow(value: Any) -> Any:
    """New mappings and lists in flow style ({a: 1}, [x, y]), like the hand-written params.yaml."""

    if isinstance(value, Mapping):
        out = CommentedMap((k, _flow(v)) for k, v in value.items())
    elif isinstance(value, list):
        out = CommentedSeq(_flow(v) for v in value)
    else:
        return value
    out.fa.set_flow_style()
    return out


def _represent_float(representer, value: float):
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    elif text in ("inf", "-inf", "nan"):
        text = {"inf": ".inf", "-inf": "-.inf", "nan": ".nan"}[text]
    return representer.represent_scalar("tag:yaml.org,2002:float", text)
