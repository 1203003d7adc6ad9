"""Pack what the GPU checks need into `.gpu/` (git-ignored), for a GPU machine that has PyTorch but none of
this project's other dependencies and no network: the corpora files bench/model.py reads, the processed
--tasks (SST by default) and vocabulary of the experiments' workdir (bench/workdir.py), the GloVe 6B
50d rows of that vocabulary's and those tasks' tokens (the packaged matrix is 77 MB; the subset holds the vector of every
token the runs look up, so they see the same inputs), the pure-Python packages it lacks (revtok, nltk,
rouge_score), and the side-by-side harness ../shared/speedcheck with its batches built here. Then, on the GPU
machine, in the repository root, `bash bench/gpu_check.sh` (it writes its results to $OUT, or to .gpu/out),
or a grid such as experiments/table2.sh with WORKDIR=.gpu/work SET=model.word_vectors=.gpu/glove.

    .venv/bin/python -m bench.gpu_pack                     # prepares the workdir's data first if needed
    .venv/bin/python -m bench.gpu_pack --tasks woz.en,srl  # what the Table 2 grid needs; then carry .gpu

Nothing here is committed: `.gpu/` holds copies of ../shared/corpora files.
"""
from __future__ import annotations

import argparse
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from mqan.vectors import MATRIX, WORDS, open_source

ROOT = Path(__file__).resolve().parents[1]

# pure-Python packages the runs import that the GPU image lacks (revtok: tokenizing; the last two: ROUGE,
# which eval/metrics imports; their own needs, absl, six, regex, are in the image)
SITE = ("revtok", "nltk", "rouge_score")
RENAMED = ("sst.happy_angry", "sst.supportive_unsupportive")  # the zero-shot question's renamed SST tasks
CORPORA = ("squad/dev-v1.1.json", "sst/train_binary_sent.csv", "sst/dev_binary_sent.csv")


def task_tokens(work: Path, tasks: list[str]) -> set[str]:
    """Every token the runs of `tasks` can look up: the vocabulary's and the tasks' processed splits'."""
    tokens = {line.rstrip("\n").strip() for line in (work / "vocab.txt").read_text(encoding="utf-8").splitlines()}
    for task, split in ((t, s) for t in tasks for s in ("train", "validation")):
        if not (work / "processed" / task / split).is_dir():  # the renamed SST tasks: validation only
            continue
        table = pq.read_table(work / "processed" / task / split)
        for column in ("context_tokens", "question_tokens", "answer_tokens"):
            for row in table.column(column).to_pylist():
                tokens.update(t.strip() for t in row)
    return tokens


def pack_table3(work: Path, out: Path) -> set[str]:
    """Table 3's prepared workdir (processed five tasks, vocab.txt, params.yaml) copied to `out`; its tokens."""
    if not (work / "vocab.txt").is_file() or not (work / "params.yaml").is_file():
        raise SystemExit(f"error: {work} is not a prepared Table 3 workdir: run "
                         f"`python -m experiments.table3 prepare --workdir {work}` first")
    tasks = sorted(p.name for p in (work / "processed").iterdir() if p.is_dir())
    for task in tasks:
        shutil.copytree(work / "processed" / task, out / "processed" / task)
    for name in ("vocab.txt", "params.yaml"):
        shutil.copy2(work / name, out / name)
    return task_tokens(work, tasks)


def glove_subset(tokens: set[str], out: Path) -> int:
    """The packaged GloVe 6B 50d rows of `tokens`, as a vector folder (vectors.npy + words.parquet)."""
    source = open_source("glove-6b-50d")
    words = sorted(t for t in tokens if t in source)
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / MATRIX, source.lookup(words))
    pq.write_table(pa.table({"word": words}), out / WORDS)
    return len(words)


def pack_speedcheck(harness: Path, out: Path, raw: Path) -> None:
    """The side-by-side harness (../shared/speedcheck, with the original's model files) and its batches, built
    here once (its make_batches.py reads the corpora mirror, which does not travel): .gpu/speedcheck/."""
    if not (harness / "run_all.sh").is_file():
        raise SystemExit(f"error: {harness} has no run_all.sh: pass --speedcheck <the harness folder>")
    shutil.copytree(harness, out / "speedcheck", ignore=shutil.ignore_patterns("__pycache__"))
    work = out / "speedcheck_work"
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(harness / "make_batches.py"), "--project", str(ROOT), "--raw", str(raw),
                    "--out", str(work / "batches.pkl")], check=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--raw", type=Path, default=ROOT.parent / "shared" / "corpora", help="the corpora mirror")
    ap.add_argument("--workdir", type=Path, default=ROOT / "checkpoints" / "readme-experiment",
                    help="the experiments' workdir (bench/workdir.py: processed/ and vocab.txt)")
    ap.add_argument("--out", type=Path, default=ROOT / ".gpu")
    ap.add_argument("--speedcheck", type=Path, default=ROOT.parent / "shared" / "speedcheck",
                    help="the side-by-side harness with the original MQAN (default: %(default)s)")
    ap.add_argument("--tasks", default="sst", help="comma-separated workdir tasks to pack (default: %(default)s); "
                    "the renamed SST tasks, where prepared, always (experiments/grid.sh asks the zero-shot question)")
    ap.add_argument("--table3-workdir", type=Path, metavar="DIR",
                    help="also Table 3's workdir (`python -m experiments.table3 prepare --workdir DIR`: its five "
                         "tasks, vocabulary and params) as .gpu/table3, its tokens in the GloVe subset "
                         "(experiments/grid.sh with TABLE3_WORKDIR=.gpu/table3)")
    args = ap.parse_args()
    tasks = args.tasks.split(",")
    if not all((args.workdir / "processed" / t / "train").is_dir() for t in tasks):
        # the pack carries the experiments' workdir, so it prepares it as they do (deca prepare + the vocabulary)
        from bench.workdir import prepare

        prepare(args.workdir.resolve())
    absent = [rel for rel in CORPORA if not (args.raw / rel).is_file()]
    if absent:
        ap.error(f"{args.raw} lacks {', '.join(absent)}: pass --raw <a mirror of the official corpora>")
    shutil.rmtree(args.out, ignore_errors=True)
    for rel in CORPORA:
        (args.out / "corpora" / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(args.raw / rel, args.out / "corpora" / rel)
    tasks += [t for t in RENAMED if (args.workdir / "processed" / t / "validation").is_dir() and t not in tasks]
    for task in tasks:
        if not (args.workdir / "processed" / task).is_dir():
            ap.error(f"{args.workdir / 'processed'} has no {task!r}: the workdir holds "
                     f"{', '.join(sorted(p.name for p in (args.workdir / 'processed').iterdir()))}")
        shutil.copytree(args.workdir / "processed" / task, args.out / "work" / "processed" / task)
    shutil.copy2(args.workdir / "vocab.txt", args.out / "work" / "vocab.txt")
    tokens = task_tokens(args.workdir, tasks)
    if args.table3_workdir:
        tokens |= pack_table3(args.table3_workdir, args.out / "table3")
    n = glove_subset(tokens, args.out / "glove")
    for name in SITE:
        module = importlib.import_module(name)
        shutil.copytree(Path(module.__file__).parent, args.out / "site" / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    pack_speedcheck(args.speedcheck, args.out, args.raw)
    size = sum(f.stat().st_size for f in args.out.rglob("*") if f.is_file())
    print(f"{args.out}: corpora files, processed {', '.join(tasks)}, {n:,} GloVe rows, {', '.join(SITE)}, "
          f"the side-by-side harness and its batches; {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
