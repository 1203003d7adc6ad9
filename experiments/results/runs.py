"""Turn a finished run folder of experiments/single_task.py (its curve.json) into a run of a results record,
with everything issue 33 asks a record to hold: command, commit, params digest, seed, machine (CPU model,
cores, bf16 units, GPU), load, minutes, curve and final scores.

    python -m experiments.results.runs table2 checkpoints/table2/sst-s2s-s11 ... [--machine xeon]
    python -m experiments.results.runs table3 <export>/table3-* ...       # experiments/results/grid_runs.py
    python -m experiments.results.runs zero_shot <export>/zero-shot-* <export>/table3-* ...

The runs replace those of the same name in docs/results/records/<record>.json, and each run's per-example
record (<folder>/examples.json.gz, experiments/results/examples.py) is copied to
docs/results/records/examples/<record>/<run>.json.gz; a run without one keeps none there (its page then says
"seed-only interval"). Run this on the machine that made them, right after (the machine and the commit are
read here), or give --machine and --commit for folders brought back from another machine.
"""
from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path

from bench.record import commit, this_machine
from experiments.results import examples, grid_runs, pending, records, table2


def params_digest(run: dict) -> str:
    """sha256 (16 hex) of the overlay files' text, the overrides and the training precision (single_task.py's
    `--precision`, which sets `train.precision`): equal digests, equal params. The precision is hashed only
    where it is not fp32, the default, so that the digests of fp32 runs made before it was hashed still hold."""
    h = hashlib.sha256()
    for path in run.get("overlay", []):
        h.update((records.ROOT / path).read_bytes())
    h.update("\n".join(run.get("overrides", [])).encode())
    if run.get("precision", "fp32") != "fp32":
        h.update(f"\ntrain.precision={run['precision']}".encode())
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
                       f"{curve[1]['iteration'] - curve[0]['iteration'] if len(curve) > 1 else iters} "
                       f"--precision {run.get('precision', 'fp32')} {overlay} {sets}",
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


def add(record_name: str, folders: list[Path], machine: str, made_at: str | None = None,
        described: dict | None = None) -> dict:
    """The record with `folders`' runs in place of those of the same name, their per-example records beside it,
    and the machine (this one unless `described`) under `machine`. Every folder is read and checked before
    anything is written. Table 2: a run at another budget than its task's runs waits in `pending`
    (experiments/results/pending.py) until the plan's seeds and variants at that budget are all in."""
    path = records.RECORDS / f"{record_name}.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    new = [from_folder(f, machine, made_at) for f in folders]
    kept = {f.name: examples.read(f / examples.FILE) for f in folders if (f / examples.FILE).is_file()}
    staged = [r for r in new if record_name == "table2" and pending.waits(record, r)]
    now = [r for r in new if r not in staged]
    names = {r["name"] for r in now}
    record["runs"] = [r for r in record["runs"] if r["name"] not in names] + now
    record["machines"][machine] = described or this_machine()
    for name in names & kept.keys():
        examples.write(examples.DIR / record_name / f"{name}.json.gz", kept[name])
    for run in staged:
        pending.stage(record, run, kept.get(run["name"]))
    moves: list = []
    if staged:
        promoted, moves = pending.promote(record, records.load("plan"), table2.VARIANTS)
        for task in promoted:
            print(f"{task}: every run the plan asks at {table2.budget(record, task)} iterations is in; they "
                  "replace the task's runs (the old ones under the record's `replaced`)")
        for task, entry in record.get("pending", {}).items():
            left = pending.missing(record, records.load("plan"), task, table2.VARIANTS)
            n = len(entry["runs"])
            print(f"{task}: {n} run{'s' * (n != 1)} at {entry['iterations']:,} iterations wait in the record's "
                  f"`pending` ({len(left)} more the plan asks: {', '.join(f'{v}-s{s}' for v, s in left[:8])}"
                  f"{' ...' if len(left) > 8 else ''})")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    pending.move_all(moves)
    return record


def main(argv: list[str] | None = None) -> int:
    """Add run folders to a record."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("record", help="docs/results/records/<record>.json")
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--machine", default="this", help="the machine's key in the record (default: %(default)s)")
    ap.add_argument("--machine-file", type=Path, metavar="JSON",
                    help="the machine that made the runs and its commit, as experiments/grid.sh writes them "
                         "(machine.json: cpu, cores, bf16_units, gpu, commit), for folders brought back from it")
    args = ap.parse_args(argv)
    missing = [str(f) for f in args.folders if not (f / "curve.json").is_file()]
    if missing:
        ap.error(f"no curve.json (unfinished run?) in {', '.join(missing)}")
    described = made_at = None
    if args.machine_file:
        found = json.loads(args.machine_file.read_text(encoding="utf-8"))
        lacking = [f for f in (*records.MACHINE_FIELDS, "commit") if f not in found]
        if lacking:
            ap.error(f"{args.machine_file}: no {', '.join(lacking)} (experiments/grid.sh writes all of them)")
        described, made_at = {f: found[f] for f in records.MACHINE_FIELDS}, found["commit"]
        if found.get("units") is not None:  # the CPU's bf16/AMX units (bench.record.this_machine), where recorded
            described["units"] = found["units"]
    try:
        if args.record in ("table3", "zero_shot"):  # experiments/results/grid_runs.py
            bases = [from_folder(f, args.machine, made_at) for f in args.folders]
            convert = grid_runs.add_table3 if args.record == "table3" else grid_runs.add_zero_shot
            convert(args.folders, bases, args.machine, described or this_machine())
        else:
            add(args.record, args.folders, args.machine, made_at, described)
    except records.RecordError as exc:
        raise SystemExit(f"error: {exc}") from None
    n = len(args.folders)
    print(f"{n} run{'s' * (n != 1)} into docs/results/records/{args.record}.json")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
