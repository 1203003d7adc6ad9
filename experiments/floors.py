"""The floors behind the results pages (issue 45, item 1): every trivial answerer of eval/floors.py scored on
the validation rows each page's runs were validated on, and the strongest, kept as the record
docs/results/records/floors.json, so that `make results` needs no data.

    python -m experiments.floors --corpora ../shared/corpora --out docs/results/records/floors.json

Three sets of rows:
  validation  every validation row of the tasks the pages judge (Table 2, zero-shot, Figure 3, the
              single-task and multitask pages: SST, QA-SRL, WOZ, MWSC, the renamed SST questions)
  table3      the first `train.max_val_examples` rows (500) of each validation split of Table 3's five tasks
              (infra/params/table3.yaml), squad_dev among them: what its runs were validated on
  transfer    the first 300 pairs of IWSLT14 TED dev2010 German→English, the custom task `iwslt_de_en` that
              experiments/transfer_iwslt.py validates on (written as its JSON lines, declared as it declares
              it), scored by BLEU and by nF1, the two figures the transfer page shows
The rows are the project's own: each task's reader on the raw files, then `deca prepare`'s per-example step
(pipelines.rows.to_row: lowercasing, revtok, the task's row hook) with params.yaml's prepare options, in
reader order, which is the order of the processed Parquet shards the runs read their first rows from.
"""
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Sequence

from bench import record
from deca.config import CustomTaskConfig, Params, from_dict, read_params
from deca.custom_tasks import declare
from deca.errors import ConfigError
from deca.params_file import load_params_file
from deca.registry import Example, get_task
from eval.api import headline_metric
from eval.floors import floors, highest
from experiments import transfer_iwslt
from pipelines.prepare import task_options
from pipelines.rows import to_row

ROOT = record.ROOT
TABLE3 = ROOT / "infra" / "params" / "table3.yaml"
SHARED = "../shared/corpora"  # how infra/params/table3.yaml names the corpora folder, from the project root
VALIDATION = ("sst", "srl", "woz.en", "schema", "sst.happy_angry", "sst.supportive_unsupportive")
DEFAULT_OUT = ROOT / "docs" / "results" / "records" / "floors.json"


def table3_params(corpora: Path, path: Path = TABLE3) -> tuple[list[str], int, dict[str, CustomTaskConfig]]:
    """(Table 3's tasks, its validation cap, its custom tasks with their files under `corpora`)."""
    raw = load_params_file(path) or {}
    train = raw.get("train") or {}
    if not train.get("tasks") or not isinstance(train.get("max_val_examples"), int):
        raise ConfigError(f"{path}: train.tasks and train.max_val_examples are what the table3 floors read; "
                          "give both")
    custom = {}
    for name, cfg in (raw.get("custom_tasks") or {}).items():
        files = {s: str(corpora / Path(p).relative_to(SHARED)) if p.startswith(SHARED + "/") else str(ROOT / p)
                 for s, p in cfg.get("files", {}).items()}
        custom[name] = from_dict(CustomTaskConfig, {**cfg, "files": files}, where=f"{path}: custom_tasks.{name}")
    return list(train["tasks"]), train["max_val_examples"], custom


def task_rows(task: str, corpora: Path, params: Params, split: str = "validation",
              limit: int | None = None) -> list[dict]:
    """The processed rows of `task`'s `split` (the first `limit`), from its raw files under `corpora`."""
    found = get_task(task)
    options = task_options(params.prepare, [task])[task]
    rows = []
    for example in found.read(split, found.files(split, corpora), options):
        if not isinstance(example, Example):
            continue
        row = to_row(found, split, example, options, params.prepare.lowercase)
        if isinstance(row, dict):
            rows.append(row)
            if limit is not None and len(rows) >= limit:
                break
    return rows


def entry(task: str, rows: Sequence[dict], split: str, limit: int | None, metric: str | None = None) -> dict:
    """One task's record: its rows, metric, every floor (rounded to 4 decimals) and the strongest."""
    found = {label: round(value, 4) for label, value in floors(task, rows, metric).items()}
    label, value = highest(found)
    return {"split": split, "rows": "all" if limit is None else f"the first {limit}", "examples": len(rows),
            "metric": metric or headline_metric(task), "floors": found, "floor": value, "answerer": label}


def transfer_set(corpora: Path, params: Params, limit: int = 300) -> dict[str, dict]:
    """{"iwslt_de_en": BLEU floors, "iwslt_de_en nf1": nF1 floors} of the transfer page's validation pairs."""
    task, xml = transfer_iwslt.TASK, corpora / "iwslt" / "IWSLT14_de-en_fairseq" / "de-en"
    with tempfile.TemporaryDirectory() as tmp:
        files = transfer_iwslt.write_jsonl(Path(tmp), xml)
        cfg = CustomTaskConfig(files=files, metric="bleu", question=transfer_iwslt.QUESTION,
                               fields={"context": "de", "answer": "en"})
        declare(Params(custom_tasks={task: cfg}))
        try:
            rows = task_rows(task, corpora, params, limit=limit)
            return {task: entry(task, rows, "validation", limit), f"{task} nf1": entry(task, rows, "validation",
                                                                                      limit, "nf1")}
        finally:
            declare(Params())


def compute(corpora: Path, tasks: Sequence[str] = VALIDATION, table3: Path | None = TABLE3,
            transfer: bool = True) -> dict[str, dict]:
    """{"validation": {task: entry}, "table3": {task: entry}, "transfer": {...}} from the raw files under
    `corpora` (no table3 set when `table3` is None, no transfer set without `transfer`)."""
    params, _ = read_params(ROOT / "params.yaml")
    sets = {"validation": {t: entry(t, task_rows(t, corpora, params), "validation", None) for t in tasks}}
    if table3 is not None:
        names, limit, custom = table3_params(corpora, table3)
        declare(Params(custom_tasks=custom))
        try:
            sets["table3"] = {t: entry(t, task_rows(t, corpora, params, limit=limit), "validation", limit)
                              for t in names}
        finally:
            declare(Params())
    if transfer:
        sets["transfer"] = transfer_set(corpora, params)
    return sets


def main(argv: list[str] | None = None) -> int:
    """Compute the floors from --corpora and write the record to --out."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpora", type=Path, default=Path(os.environ.get("DECA_SHARED_CORPORA", ROOT.parent / "shared"
                                                                                                / "corpora")),
                    help="the raw corpora (the shared mirror; default $DECA_SHARED_CORPORA or ../shared/corpora)")
    ap.add_argument("--tasks", nargs="+", default=list(VALIDATION), help="tasks of the whole-validation set")
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = ap.parse_args(argv)
    if not args.corpora.is_dir():
        ap.error(f"no corpora folder {args.corpora}: give --corpora (the shared mirror of the raw files)")
    started = record.begin("experiments.floors", argv)
    sets = compute(args.corpora, args.tasks)
    settings = {"corpora": "the shared mirror (../shared/corpora, MANIFEST.md)", "table3": str(TABLE3.relative_to(ROOT))}
    record.write(args.out, started, settings, {"what": "the trivial floors of each page's validation rows "
                                                       "(eval/floors.py); `floor` is the strongest", "sets": sets})
    for name, found in sets.items():
        for task, e in found.items():
            print(f"{name:10} {task:28} {e['examples']:5} {e['metric']:14} {e['answerer']:20} {e['floor']:7.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
