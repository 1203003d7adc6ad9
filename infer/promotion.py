"""Gated promotion: an alias (``champion``) moves to a candidate version only when the evidence says it is better.

`gated_promote` compares the candidate with the version the alias points at now, both evaluated by
`deca evaluate` on the same validation examples (their predictions directories), with the rule of
eval/gate.py (paired 95% lower bound of the decaScore difference above 0, no task below its non-inferiority
margin). The evidence is logged on the candidate version whatever the decision: tags ``gate.<alias>.*``
(decision, holder version, rule, the decaScore and each task's difference with its interval, the reasons)
and the whole comparison as ``gate/<alias>-v<candidate>-vs-v<holder>.json`` in the candidate's MLflow run.
A refusal raises `PromotionRefused`: one line naming the task (or the decaScore) and its interval.
An alias that points at no version yet moves without a comparison (there is nothing to compare with).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from deca.config import RegisterConfig
from deca.errors import ConfigError, DecaError
from eval.gate import RULE, evidence, refusal
from infer.model_uri import model_version, registry_uri, tracking
from infer.registry import alias_holder, check_alias

TAG_LIMIT = 5000  # MLflow's longest model version tag value


class PromotionRefused(DecaError):
    """The gate kept the alias where it was: the candidate is not shown to be better."""


@dataclass
class Promotion:
    """What a gated promotion did: the version the alias pointed at before (None: none) and the evidence."""

    before: str | None
    evidence: dict | None


def gated_promote(name: str, version: str, alias: str, candidate: Sequence[str | Path],
                  holder: Sequence[str | Path], config: RegisterConfig, uri: str | None = None) -> Promotion:
    """Move `alias` of `name` to `version` if the gate accepts it (see the module docstring)."""
    check_alias(alias)
    with tracking(uri or registry_uri()) as client:
        mv = model_version(client, name, version=version)
        before = alias_holder(client, name, alias)
        if before is None or before == str(version):
            client.set_registered_model_alias(name, alias, version)
            return Promotion(before, None)
        if not candidate or not holder:
            raise ConfigError(f"models:/{name}@{alias} is gated: give --candidate-predictions DIR (version {version}) "
                              f"and --holder-predictions DIR (version {before}), `deca evaluate --model "
                              f"models:/{name}/N` of each on the same validation examples")
        found = evidence(candidate, holder, config.margins, config.replicates, config.seed)
        found.update({"name": name, "alias": alias, "candidate_version": str(version), "holder_version": before})
        log_evidence(client, mv, alias, found)
        if not found["accepted"]:
            raise PromotionRefused(f"models:/{name}@{alias} stays on version {before}, version {version} refused: "
                                   f"{refusal(found)}")
        client.set_registered_model_alias(name, alias, version)
    return Promotion(before, found)


def interval(diff: dict) -> str:
    return f"{diff['value']:+.2f} [{diff['low']:+.2f}, {diff['high']:+.2f}]"


def log_evidence(client, mv, alias: str, found: dict) -> None:
    """The evidence on the candidate version (tags) and in its run (the full JSON)."""
    prefix = f"gate.{alias}."
    tags = {"decision": "accepted" if found["accepted"] else "refused", "holder_version": found["holder_version"],
            "rule": RULE, "reasons": "; ".join(found["reasons"]) or "none",
            "candidate_predictions": ",".join(found["candidate"]), "holder_predictions": ",".join(found["holder"])}
    for key, row in found["rows"].items():
        margin = f", margin {row['margin']:g}" if "margin" in row else ""
        tags[key] = f"{interval(row['diff'])}{margin}"
    for key, value in tags.items():
        client.set_model_version_tag(mv.name, mv.version, prefix + key, str(value)[:TAG_LIMIT])
    if mv.run_id:
        path = f"gate/{alias}-v{mv.version}-vs-v{found['holder_version']}.json"
        client.log_text(mv.run_id, json.dumps(found, indent=2, sort_keys=True), path)
