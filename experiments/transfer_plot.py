"""Figure 4-style curves of experiments/transfer_iwslt.py: pretrained vs random initialization, side by side.

    .venv/bin/python -m experiments.transfer_plot checkpoints/transfer-2000/report-transfer.json \\
        --out docs/results/transfer

Writes <out>.png (validation BLEU, validation nF1 and training loss against iterations) and <out>.json
(the curves), and prints a Markdown table of the validation points.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

PANELS = (("curve", "validation BLEU", 2), ("nf1", "validation nF1", 1), ("loss", "training loss", 1))
STYLE = {"pretrained": ("tab:red", "MQAN pretrained on SST, WOZ, QA-SRL, MWSC"), "random": ("tab:blue", "random init")}


def points(run: dict, key: str, index: int) -> tuple[list[int], list[float]]:
    """(iterations, values) of one curve of a run in the report."""
    rows = run.get(key, [])
    return [int(r[0]) for r in rows], [float(r[index]) for r in rows]


def plot(report: dict, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(PANELS), figsize=(13, 3.6))
    for ax, (key, title, index) in zip(axes, PANELS):
        for name, run in report["runs"].items():
            colour, label = STYLE.get(name, (None, name))
            x, y = points(run, key, index)
            ax.plot(x, y, color=colour, label=label, marker="o" if key != "loss" else None, markersize=3)
        ax.set_title(title)
        ax.set_xlabel("iterations")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.suptitle(f"German to English (IWSLT14, {report['train_pairs']:,} training pairs): "
                 "transfer vs random initialization", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    return out


def table(report: dict) -> str:
    """Markdown: BLEU / nF1 of each run at every validation."""
    runs = report["runs"]
    steps = sorted({int(r[0]) for run in runs.values() for r in run["curve"]})
    lines = ["| iteration | " + " | ".join(f"{n} BLEU | {n} nF1" for n in runs) + " |",
             "|---" * (1 + 2 * len(runs)) + "|"]
    for step in steps:
        cells = []
        for run in runs.values():
            bleu = dict(zip(*points(run, "curve", 2))).get(step)
            nf1 = dict(zip(*points(run, "nf1", 1))).get(step)
            cells += [f"{bleu:.2f}" if bleu is not None else "", f"{nf1:.1f}" if nf1 is not None else ""]
        lines.append(f"| {step} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("report", help="report-transfer.json of experiments/transfer_iwslt.py")
    ap.add_argument("--out", default="docs/results/transfer", help="output prefix (.png, .json)")
    args = ap.parse_args()
    try:
        report = json.loads(Path(args.report).read_text())
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {args.report}: cannot read the report ({exc}); "
                         "run `python -m experiments.transfer_iwslt` first")
    out = Path(args.out)
    plot(report, out.with_suffix(".png"))
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    print(table(report))


if __name__ == "__main__":
    main()
