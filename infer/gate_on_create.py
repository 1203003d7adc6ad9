"""`deca register --run R --name N --gate-on-create [ALIAS]`: a new version runs the promotion gate on its own.

The version just registered and the version ALIAS (default champion) points at are each evaluated with
`deca evaluate`'s settings (params.evaluate: the same split, tasks and examples for both) into
<gate dir>/<name>-v<version>/{candidate,holder}/ (the predictions, metrics and report of each side), and
compared by the gate of infer/promotion.py (eval/gate.py, register.accept, register.margins). The verdict is
written to the new version's tags (``gate.<alias>.decision`` accepted or refused, with each task's difference
and interval, as a gated promotion writes them) and the whole comparison into its MLflow run. The alias does
not move: promoting stays `deca register --version N --alias ALIAS`, which can cite these predictions. With
no version at the alias yet (or the new version already there), the tag says so and nothing is evaluated.
"""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

from infer.evaluate import evaluate
from infer.model_uri import model_checkpoint, model_version, registry_uri, tracking
from infer.promotion import log_evidence
from infer.registry import alias_holder, check_alias
from eval.gate import evidence

GATE_DIR = "eval/gate"


def gate_new_version(params, name: str, version: str, alias: str, uri: str | None = None,
                     gate_dir: str | Path = GATE_DIR) -> dict | None:
    """Judge `version` of `name` against the holder of `alias` (see the module docstring); the evidence, or None
    when there was nothing to compare with."""
    check_alias(alias)
    uri = uri or registry_uri()
    with tracking(uri) as client:
        mv = model_version(client, name, version=version)
        holder = alias_holder(client, name, alias)
        if holder is None or holder == str(version):
            why = f"no version at {alias} yet" if holder is None else f"already at {alias}"
            client.set_model_version_tag(name, version, f"gate.{alias}.decision", f"not compared: {why}")
            return None
    out = Path(gate_dir) / f"{name}-v{version}"
    sides = {side: predictions_of(params, model_checkpoint(f"models:/{name}/{v}", uri), out / side)
             for side, v in (("candidate", str(version)), ("holder", holder))}
    rc = params.register
    found = evidence([sides["candidate"]], [sides["holder"]], rc.margins, rc.replicates, rc.seed, rc.accept)
    found.update({"name": name, "alias": alias, "candidate_version": str(version), "holder_version": holder})
    with tracking(uri) as client:
        log_evidence(client, mv, alias, found)
    return found


def predictions_of(params, checkpoint: Path, folder: Path) -> Path:
    """`deca evaluate` of `checkpoint` with params.evaluate's settings, every output under `folder`; the
    predictions directory."""
    p = copy.deepcopy(params)
    p.evaluate = dataclasses.replace(p.evaluate, predictions_dir=str(folder / "predictions"),
                                     metrics_path=str(folder / "metrics.json"), report_dir=str(folder / "report"),
                                     plots_dir=str(folder / "plots"))
    evaluate(p, checkpoint=str(checkpoint), progress=False, mlflow=False)
    return folder / "predictions"
