"""The command-line side of params: ``--params FILE`` and ``--set KEY=VALUE``, the same on every command that
reads them (each command's module calls `add_params_arguments`, then deca/config.py's `read_params` with
`parse_overrides` of what was set)."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, Sequence

import yaml

from deca.config import DEFAULT_PARAMS
from deca.errors import ConfigError


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``section.key=value`` pairs of ``--set``; values are YAML (``5``, ``[sst, woz.en]``, ``null``, ``true``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or "." not in key:
            raise ConfigError(f"--set {item!r}: expected section.key=value, e.g. train.iterations=50")
        try:
            out[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise ConfigError(f"--set {item!r}: the value is not valid YAML ({exc})") from exc
    return out


class _ExistingParams(argparse.Action):
    """``--params FILE`` given explicitly must exist (only the default params.yaml may be missing)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if not Path(values).is_file():
            raise argparse.ArgumentError(self, f"{values}: no such params file (leave --params out to use "
                                               f"{DEFAULT_PARAMS}, or the defaults where there is none)")
        setattr(namespace, self.dest, values)


def add_params_arguments(parser) -> None:
    """``--params FILE`` and ``--set KEY=VALUE`` (repeatable), the same on every command that reads params."""
    group = parser.add_argument_group("parameters")
    group.add_argument("--params", default=DEFAULT_PARAMS, metavar="FILE", action=_ExistingParams,
                       help="params file (default: %(default)s; missing: the defaults)")
    group.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a parameter, e.g. train.iterations=50 (repeatable; YAML values)")
