"""How often greedy decoding in bf16 or int8 gives the same answers as fp32, on validation splits, for trained
models (issue 27: "Greedy ids under bf16 may differ from fp32; report how often").

For each model (a run folder or a model file) and each task it was validated on, decodes the task's whole
processed validation split once per precision (mqan/decode.py, as `deca evaluate --precision` does),
scores every precision with eval.api, and counts the answers identical to fp32's.

    .venv/bin/python -m experiments.precision_agreement checkpoints/readme-experiment/checkpoints/<run> ... \\
        --processed checkpoints/readme-experiment/processed [--precisions fp32,bf16,int8] [--out table.md]
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def agreement(model_path: Path, processed: Path, precisions: list[str], batch_size: int, threads: int) -> list[dict]:
    """One row per (task, precision): headline metric, identical answers to fp32 (%), decoding seconds."""
    import torch

    from eval.api import score_task
    from train.data import read_share
    from mqan import precision as precision_mod
    from mqan.checkpoint import load_model
    from mqan.decode import decode

    torch.set_num_threads(threads)
    model, vocab, extra = load_model(model_path)
    cpu = torch.device("cpu")
    rows_out = []
    for task in sorted(extra.get("results", {})):
        rows = read_share(processed, task, "validation").to_pylist()
        answers: dict[str, list[str]] = {}
        for name in precisions:
            chosen = precision_mod.resolve(name, cpu, "--precisions", precision_mod.DECODING)
            t0 = time.perf_counter()
            answers[name] = [a.text for a in decode(model, vocab, rows, batch_size, model.cfg.max_answer_length, cpu,
                                                    precision=chosen)]
            seconds = time.perf_counter() - t0
            preds = {str(r["id"]): text for r, text in zip(rows, answers[name])}
            headline = score_task(task, preds, rows)["headline"]
            same = sum(a == b for a, b in zip(answers[name], answers[precisions[0]]))
            rows_out.append({"model": str(model_path), "iteration": extra.get("iteration"), "task": task,
                             "precision": chosen, "examples": len(rows), "metric": headline["name"],
                             "value": float(headline["value"]), "identical %": 100 * same / len(rows),
                             "seconds": seconds})
    return rows_out


def table(rows: list[dict], base: str) -> str:
    lines = [f"| model | iteration | task | precision | examples | headline | identical to {base} | decoding s |",
             "|---|---:|---|---|---:|---:|---:|---:|"]
    for r in rows:
        path = Path(r["model"])
        name = path.parent.parent.name if path.parent.name == "best" else path.stem  # the run folder's name
        lines.append(f"| {name} "
                     f"| {r['iteration']} | {r['task']} | {r['precision']} | {r['examples']} "
                     f"| {r['metric']} {r['value']:.1f} | {r['identical %']:.1f}% | {r['seconds']:.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("models", nargs="+", type=Path, help="run folders (their best model) or model files")
    ap.add_argument("--processed", type=Path, default=ROOT / "checkpoints" / "readme-experiment" / "processed",
                    help="processed data holding each task's validation split (default: %(default)s)")
    ap.add_argument("--precisions", default="fp32,bf16,int8",
                    help="decoding precisions, the first one the reference (default: %(default)s)")
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, help="also write the table (Markdown) to this file")
    args = ap.parse_args(argv)

    from mqan import precision as precision_mod
    from deca.runs import model_file

    precisions = [p for p in args.precisions.split(",") if p]
    for p in precisions:
        precision_mod.check(p, "--precisions", precision_mod.DECODING)
    missing = [str(m) for m in args.models if not model_file(m).exists()]
    if missing:
        ap.error(f"no model at {', '.join(missing)} (a run folder needs best/model.pt)")
    rows = [r for m in args.models for r in agreement(model_file(m), args.processed, precisions, args.batch_size,
                                                      args.threads)]
    text = table(rows, precisions[0])
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    from deca.errors import DecaError

    try:
        sys.exit(main())
    except DecaError as exc:  # a model or data file that does not fit: one line, as `deca` prints it
        sys.exit(f"error: {exc}")
