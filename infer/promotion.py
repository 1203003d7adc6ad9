"""Gated promotion: an alias (``champion``) moves to a candidate version only when the evidence says it is better.

`gated_promote` compares the candidate with the version the alias points at now, both evaluated by
`deca evaluate` on the same validation examples (their predictions directories), with the rule of
eval/gate.py that register.accept names (superior, the default: paired 95% lower bound of the decaScore
difference above 0, no task below its non-inferiority margin; non_inferior: no task below its margin). The
evidence is logged on the candidate version whatever the decision: tags ``gate.<alias>.*`` (decision,
holder version, accept and its rule, the decaScore and each task's difference with its interval, the reasons)
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
from deca.errors import ConfigError, DataError, DecaError
from eval.gate import evidence, refusal
from infer.evaluate import MODEL_FILE
from infer.mlflow_model import CHECKPOINT_TAG
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
        check_made_by(client, mv, candidate)
        check_made_by(client, model_version(client, name, version=before), holder)
        found = evidence(candidate, holder, config.margins, config.replicates, config.seed, config.accept)
        found.update({"name": name, "alias": alias, "candidate_version": str(version), "holder_version": before})
        log_evidence(client, mv, alias, found)
        if not found["accepted"]:
            raise PromotionRefused(f"models:/{name}@{alias} stays on version {before}, version {version} refused: "
                                   f"{refusal(found)}")
        client.set_registered_model_alias(name, alias, version)
    return Promotion(before, found)


def check_made_by(client, mv, directories: Sequence[str | Path]) -> None:
    """DataError naming the predictions directory that version `mv`'s model did not make: its MODEL_FILE
    (written by `deca evaluate`) names another checkpoint than the one the version's logged model holds."""
    model_id = mv.model_id or (mv.source or "").removeprefix("models:/")  # the store may leave model_id unset
    want = client.get_logged_model(model_id).tags.get(CHECKPOINT_TAG) if model_id.startswith("m-") else None
    for directory in map(Path, directories):
        made = directory / MODEL_FILE
        if not made.is_file():
            raise DataError(made, "missing: nothing says which model made these predictions",
                            fix=f"evaluate version {mv.version} again: deca evaluate --model models:/{mv.name}/{mv.version}")
        try:
            sha = json.loads(made.read_text(encoding="utf-8")).get("sha256")
        except (ValueError, AttributeError):
            raise DataError(made, "not the JSON object `deca evaluate` writes (checkpoint, sha256)",
                            fix=f"deca evaluate --model models:/{mv.name}/{mv.version}") from None
        if want is None or sha != want:
            raise DataError(made, f"these predictions were made by another model than version {mv.version} of "
                            f"{mv.name} (checkpoint sha256 {str(sha)[:12]}…, the version's {str(want)[:12]}…)",
                            fix=f"deca evaluate --model models:/{mv.name}/{mv.version}")


def interval(diff: dict) -> str:
    return f"{diff['value']:+.2f} [{diff['low']:+.2f}, {diff['high']:+.2f}]"


def log_evidence(client, mv, alias: str, found: dict) -> None:
    """The evidence on the candidate version (tags) and in its run (the full JSON)."""
    prefix = f"gate.{alias}."
    tags = {"decision": "accepted" if found["accepted"] else "refused", "holder_version": found["holder_version"],
            "accept": found["accept"], "rule": found["rule"], "reasons": "; ".join(found["reasons"]) or "none",
            "candidate_predictions": ",".join(found["candidate"]), "holder_predictions": ",".join(found["holder"])}
    for key, row in found["rows"].items():
        margin = f", margin {row['margin']:g}" if "margin" in row else ""
        tags[key] = f"{interval(row['diff'])}{margin}"
    for key, value in tags.items():
        client.set_model_version_tag(mv.name, mv.version, prefix + key, str(value)[:TAG_LIMIT])
    if mv.run_id:
        path = f"gate/{alias}-v{mv.version}-vs-v{found['holder_version']}.json"
        client.log_text(mv.run_id, json.dumps(found, indent=2, sort_keys=True), path)
