"""README experiment: transfer to a task the model never saw (paper Section 4.3, Figure 4).

The new task is German to English translation, a language pair decaNLP does not have, made from the real
IWSLT14 de-en XML files in ../shared/corpora (only their dev/test sets exist there: tst2010, tst2011,
tst2012 and TEDX dev2012, 5,863 pairs, are used as training data here; TED dev2010 is the validation
split) and declared as a custom task (params.yaml ``custom_tasks``, deca/custom_tasks.py).

Two runs with the same settings and budget, side by side:
- *pretrained*: ``train.init_from`` = the fully joint MQAN trained on SST, WOZ, QA-SRL and MWSC
  (experiments/issue10_runs.sh); the generative vocabulary now includes the translation answers, so the
  model gets a new output layer (the paper's new softmax) and keeps every other weight;
- *random*: the same model from random initialization.
Validation BLEU (greedy) on the first --val-examples of dev2010 every --val-every iterations; the curves
go to docs/results/transfer.{png,json}.

    .venv/bin/python -m experiments.transfer_iwslt --minutes 15
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
XML = ROOT.parent / "shared" / "corpora" / "iwslt" / "IWSLT14_de-en_fairseq" / "de-en"
SETS = {"train": ["TED.tst2010", "TED.tst2011", "TED.tst2012", "TEDX.dev2012"], "validation": ["TED.dev2010"]}
TASK = "iwslt_de_en"
PRETRAINED_TASKS = ["sst", "srl", "woz.en", "schema"]
QUESTION = "Translate from German to English"


def write_jsonl(out_dir: Path, xml: Path = XML) -> dict[str, str]:
    """The XML pairs (of the IWSLT14 folder `xml`) as JSON lines {"id", "de", "en"} per split; returns
    {split: path}."""
    from deca.registry import Example
    from deca.tasks.iwslt import read_xml

    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, sets in SETS.items():
        path = out_dir / f"{split}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for name in sets:
                for ex in read_xml(xml / f"IWSLT14.{name}.de-en.de.xml", xml / f"IWSLT14.{name}.de-en.en.xml"):
                    if isinstance(ex, Example):
                        f.write(json.dumps({"id": f"{name}-{ex.id}", "de": ex.context, "en": ex.answer},
                                           ensure_ascii=False) + "\n")
        files[split] = str(path)
    return files


def prepare(workdir: Path, files: dict[str, str], processed: Path) -> Path:
    """The custom task's Parquet shards next to the four tasks' and a vocabulary of all five."""
    spec = json.dumps({"metric": "bleu", "files": files, "question": QUESTION, "fields": {"context": "de", "answer": "en"}})
    deca = [sys.executable, "-m", "deca.cli"]
    common = ["--set", f"custom_tasks.{TASK}={spec}"]
    vocab = workdir / "vocab.txt"
    subprocess.run([*deca, "prepare", "--tasks", TASK, "--out", str(processed), *common], check=True, cwd=ROOT)
    subprocess.run([*deca, "prepare", "--vocab", str(vocab), "--tasks", *PRETRAINED_TASKS, TASK,
                    "--out", str(processed), *common], check=True, cwd=ROOT)
    return vocab


def params_for(pretrained_run: Path, workdir: Path, processed: Path, vocab: Path, files: dict[str, str], args):
    """The pretrained run's own model settings, training on the new task only."""
    from deca.config import CustomTaskConfig, Params, from_dict

    recorded = json.loads((pretrained_run / "deca_run.json").read_text())["params"]
    params = from_dict(Params, recorded)
    custom = {TASK: CustomTaskConfig(files=files, metric="bleu", question=QUESTION,
                                     fields={"context": "de", "answer": "en"})}
    data = dataclasses.replace(params.data, processed_dir=str(processed), vocab_path=str(vocab))
    train = dataclasses.replace(params.train, tasks=[TASK], strategy="fully_joint", iterations=args.iterations,
                                max_minutes=args.minutes, val_every=args.val_every, save_every=args.val_every,
                                max_val_examples=args.val_examples, storage_dir=str(workdir / "checkpoints"),
                                experiment="transfer", init_from=None)
    return dataclasses.replace(params, data=data, train=train, custom_tasks=custom)


def self_contained(run_dir: Path, workdir: Path) -> Path:
    """The run's best model as a checkpoint that carries its vocabulary (format 3), so that init_from keeps
    the trained embedding of every token the new vocabulary shares with it; older runs' files do not."""
    from mqan.checkpoint import load_model, save_checkpoint

    recorded = json.loads((run_dir / "deca_run.json").read_text())["params"]
    model, _, extra = load_model(run_dir / "best" / "model.pt", recorded["data"]["vocab_path"])
    return save_checkpoint(workdir / "pretrained" / "model.pt", model, extra)


def run(params, name: str, init_from: str | None, workdir: Path):
    from train.driver import fit

    p = dataclasses.replace(params, train=dataclasses.replace(params.train, init_from=init_from))
    return fit(p, run_name=f"{name}-{time.strftime('%Y%m%d-%H%M%S')}", progress=True, project=workdir)


def histories(outcome) -> dict[str, list[tuple[int, float]]]:
    """(iteration, value) of the validation nF1 and the training loss, from the run's MLflow metrics."""
    from deca.metric_logging import client

    c = client(outcome.tracking_uri)
    out = {}
    for name, key in (("nf1", f"validation/{TASK}/nf1"), ("loss", "train/loss")):
        points = sorted(c.get_metric_history(outcome.mlflow_run_id, key), key=lambda m: m.step)
        out[name] = [(m.step, m.value) for m in points]
    return out


def find_pretrained(given: str | None, readme: Path) -> Path:
    """The pretrained run directory: `given`, or the latest fully joint run of the README experiment; exits
    with the command that makes one when there is none."""
    runs = [Path(given)] if given else sorted((readme / "checkpoints").glob("fully-joint-*"))
    if not runs or not (runs[-1] / "deca_run.json").is_file():
        where = given or f"{readme / 'checkpoints'}/fully-joint-*"
        sys.exit(f"error: {where}: no trained run with a deca_run.json; train the pretrained model first:\n"
                 "  .venv/bin/python -m experiments.experiment_multitask --joint-minutes 20 --single-tasks "
                 "--overlay infra/params/glove.yaml --set train.val_every=250\nor pass --pretrained RUN_DIR")
    return runs[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pretrained", default=None, help="run directory of the pretrained model (default: the "
                    "latest fully-joint-* run of checkpoints/readme-experiment)")
    ap.add_argument("--minutes", type=float, default=15.0, help="per run")
    ap.add_argument("--iterations", type=int, default=100000, help="per run (the time budget usually ends it)")
    ap.add_argument("--val-every", type=int, default=150)
    ap.add_argument("--val-examples", type=int, default=300)
    ap.add_argument("--workdir", default=str(ROOT / "checkpoints" / "transfer-experiment"))
    ap.add_argument("--only", choices=["pretrained", "random"], help="run one of the two")
    args = ap.parse_args()

    from bench import workdir as ex

    readme = ROOT / "checkpoints" / "readme-experiment"
    pretrained = find_pretrained(args.pretrained, readme)
    if not XML.is_dir():
        sys.exit(f"error: {XML}: the IWSLT14 de-en XML files are not there; "
                 "put ../shared/corpora beside the repository")
    workdir = Path(args.workdir).resolve()
    os.environ.setdefault("MLFLOW_TRACKING_URI", f"sqlite:///{workdir / 'mlflow.db'}")
    files = write_jsonl(workdir / TASK)
    vocab = prepare(workdir, files, readme / "processed")
    params = params_for(pretrained, workdir, readme / "processed", vocab, files, args)
    report = {"pretrained_from": str(pretrained), "train_pairs": sum(1 for _ in open(files["train"])),
              "validation_examples": args.val_examples, "runs": {}}
    start = self_contained(pretrained, workdir)
    for name, init in (("pretrained", str(start)), ("random", None)):
        if args.only and args.only != name:
            continue
        outcome = run(params, f"transfer-{name}", init, workdir)
        report["runs"][name] = {"run": outcome.run_name, "mlflow_run_id": outcome.mlflow_run_id,
                                "curve": ex.curve(outcome, TASK), **histories(outcome)}
        (workdir / "report-transfer.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v["curve"][-3:] for k, v in report["runs"].items()}, indent=1))


if __name__ == "__main__":
    main()
