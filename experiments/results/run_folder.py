"""A finished experiments/single_task.py run folder (its curve.json) read as a run of a results record, with
everything issue 33 asks a record to hold: command, commit, params digest, seed, machine, load, minutes,
curve and final scores (experiments/results/runs.py adds Table 2's; grid_runs.py builds Table 3's on it)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from bench.record import commit
from experiments.results import records


def params_digest(run: dict) -> str:
    """sha256 (16 hex) of the overlay files' text and the overrides: equal digests, equal params."""
    h = hashlib.sha256()
    for path in run.get("overlay", []):
        h.update((records.ROOT / path).read_bytes())
    h.update("\n".join(run.get("overrides", [])).encode())
    return h.hexdigest()[:16]


def from_folder(folder: Path, machine: str, made_at: str | None = None) -> dict:
    """The record run of one single_task.py run folder."""
    run = json.loads((folder / "curve.json").read_text(encoding="utf-8"))
    task, curve = run["task"], run["curve"]
    best = max(curve, key=lambda p: p["headline"])
    iters = run["iterations"]
    sets = " ".join(f"--set {o}" for o in run.get("overrides", []))
    overlay = " ".join(f"--overlay {o}" for o in run.get("overlay", []))
    return {"name": folder.name, "task": task, "variant": run.get("variant", "mqan"), "seed": run["seed"],
            "command": f"python -m experiments.single_task run --task {task} --iterations {iters} --val-every "
                       f"{curve[1]['iteration'] - curve[0]['iteration'] if len(curve) > 1 else iters} {overlay} {sets}",
            "commit": made_at or commit(), "params_digest": params_digest(run), "machine": machine,
            "load": run.get("load_end"), "minutes": round(run["minutes"], 2),
            "curve": [[p["iteration"], round(p["headline"], 2)] for p in curve],
            "scores": {task: round(best["headline"], 1)}, "best_iteration": best["iteration"],
            "minutes_to_best": round(best["minutes"], 2), "still_rising": None,
            "precision": run.get("precision", "fp32"), "iterations": iters, "tokens_per_s": tokens_per_s(curve)}


def tokens_per_s(curve: list[dict]) -> int | None:
    """The median training tokens/s over the curve's points (None when not logged)."""
    rates = sorted(p["tokens_per_s"] for p in curve if p.get("tokens_per_s"))
    return round(rates[len(rates) // 2]) if rates else None
