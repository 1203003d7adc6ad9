"""The `deca prepare` Beam job: raw corpora -> processed Parquet shards, stats and dropped examples.

Pipeline (built from the known list of (task, split) pairs)::

    Create[(task, split)] -> PlanSplit (read the split once: one Unit = one shard's range of reader
                                        positions and its estimated cost; reader drops and errors tagged)
      -> BalanceUnits (units to one group per worker, costliest first to the least loaded; a group's
         units of one split form one pass)
      -> ConvertShard (read the split again, once per pass; for each unit's range: lowercase, revtok, the
         task's row hook, write part-NNNNN.parquet right there) -> partial stats, ids; row-hook drops and
         errors tagged
      stats -> CombinePerKey ─┐
      drops ──────────────────┼─ + the planned splits -> CoGroupByKey(task) -> FinalizeTask (stats.json,
                              │                                                 dropped.parquet)
      ids   -> GroupByKey(task, split, bucket) -> duplicate-id errors
    errors (every step) -> Gather -> staging/_errors.json (the driver raises the first one)

No example or row crosses a shuffle: a shard's file depends only on its range of the raw file, so the
output is the same bytes whatever the runner, the number of workers, or which worker got which shard.

Everything is written under ``<out>/.staging-<run>/``; the driver swaps each task directory into
place only after the pipeline finished without error (`pipelines.sinks.Staging`).
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from pipelines import beam_options  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402

from deca.config import PrepareConfig, TrainFilterConfig
from deca.errors import ConfigError, DataError, DecaError
from deca.registry import SPLITS, Task, all_tasks, get_task
from pipelines import sinks, stats
from pipelines import transforms as T
from pipelines import units as U

LOG = logging.getLogger(__name__)


@dataclass
class PrepareJob:
    """What one run prepares: tasks, their splits, where the raw files are and where output goes."""

    splits: dict[str, list[str]]  # task name -> splits to (re)build, in SPLITS order
    raw_root: Path  # a raw directory or a mirror (same layout)
    out: Path
    options: dict[str, Any] = field(default_factory=dict)  # task name -> task options object
    train_filter: TrainFilterConfig = field(default_factory=TrainFilterConfig)  # every training split
    lowercase: bool = True
    rows_per_shard: int = 5000
    num_shards: int = 0
    batch_size: int = 256
    from_mirror: bool = False

    @property
    def tasks(self) -> dict[str, Task]:
        return {name: get_task(name) for name in self.splits}

    def files(self) -> dict[tuple[str, str], list[str]]:
        return {(name, split): [str(p) for p in get_task(name).files(split, self.raw_root)]
                for name, splits in self.splits.items() for split in splits}


def plan_splits(task_names: Sequence[str], splits: Sequence[str] | None = None) -> dict[str, list[str]]:
    """Task -> the splits to build: all its splits, or those of `splits` it has (a split no selected
    task has is an error; a task having none of them is an error too)."""
    if splits:
        unknown = [s for s in splits if s not in SPLITS]
        if unknown:
            raise ConfigError(f"unknown split(s) {', '.join(unknown)}; use {', '.join(SPLITS)}")
    plan: dict[str, list[str]] = {}
    for name in task_names:
        have = [s for s in SPLITS if s in get_task(name).splits]
        chosen = [s for s in have if not splits or s in splits]
        if not chosen:
            raise ConfigError(f"task {name!r} has none of the splits {', '.join(splits or [])} (it has {', '.join(have)})")
        skipped = [s for s in (splits or []) if s not in have]
        if skipped:
            LOG.info("%s: no %s split; preparing %s", name, "/".join(skipped), ", ".join(chosen))
        plan[name] = chosen
    return plan


def task_options(cfg: PrepareConfig, task_names: Sequence[str]) -> dict[str, Any]:
    """Each task's options object from ``prepare.task_options.<task.key>`` (unknown keys are errors)."""
    by_key = {t.key: t for t in all_tasks().values()}
    unknown = sorted(set(cfg.task_options) - set(by_key))
    if unknown:
        raise ConfigError(f"prepare.task_options: unknown task key(s) {', '.join(unknown)}; keys are task names "
                          f"with '.' replaced by '_' (e.g. woz_en)")
    return {name: get_task(name).make_options(cfg.task_options.get(get_task(name).key)) for name in task_names}


def make_job(task_names: Sequence[str], raw_root: str | Path, out: str | Path, cfg: PrepareConfig,
             splits: Sequence[str] | None = None, from_mirror: bool = False) -> PrepareJob:
    """A PrepareJob from task names (already resolved), the raw root, the output dir and the prepare params."""
    if cfg.rows_per_shard < 1 or cfg.num_shards < 0 or cfg.batch_size < 1:
        raise ConfigError(f"prepare.rows_per_shard and prepare.batch_size must be >= 1 and prepare.num_shards >= 0 "
                          f"(got {cfg.rows_per_shard}, {cfg.batch_size}, {cfg.num_shards})")
    for what, path in (("raw directory", raw_root), ("output directory", out)):
        if "://" in str(path):
            raise ConfigError(f"{what} {path}: URLs are not supported; the task readers and the atomic swap need a "
                              "filesystem path shared by the driver and the workers (local disk, NFS, or a bucket "
                              "mounted with gcsfuse/s3fs at the same path everywhere)")
    return PrepareJob(splits=plan_splits(task_names, splits), raw_root=Path(raw_root).resolve(), out=Path(out),
                      options=task_options(cfg, task_names), train_filter=cfg.train_filter, lowercase=cfg.lowercase,
                      rows_per_shard=cfg.rows_per_shard, num_shards=cfg.num_shards, batch_size=cfg.batch_size,
                      from_mirror=from_mirror)


def check_raw_files(job: PrepareJob) -> None:
    """Fail before the pipeline starts if a raw file is missing (name it and say how to get it), or a custom
    task's file is empty."""
    missing: list[tuple[str, Path]] = []
    for (name, _split), paths in job.files().items():
        missing += [(name, Path(p)) for p in paths if not Path(p).exists()]
    if not missing:
        for name, split in job.files():
            check = getattr(get_task(name), "check_files", None)  # a custom task's own files (deca.custom_tasks)
            if check is not None:
                check(split)  # an empty one is refused here, not by the pipeline's "re-download it"
        return
    names = sorted({name for name, _ in missing})
    first = missing[0][1]
    more = f" (and {len(missing) - 1} more: {', '.join(str(p) for _, p in missing[1:4])}{', ...' if len(missing) > 4 else ''})" \
        if len(missing) > 1 else ""
    if get_task(missing[0][0]).group == "custom":
        fix = f"create it, or change custom_tasks.{missing[0][0]} in params.yaml (deca/custom_tasks.py)"
    elif job.from_mirror:
        fix = (f"the mirror {job.raw_root} lacks this file; pass another --mirror, or run "
               f"`deca download --tasks {' '.join(names)}` and prepare from --raw-dir")
    else:
        fix = f"run `deca download --tasks {' '.join(names)}` (or pass --mirror DIR to read a local mirror)"
    raise DataError(first, f"raw file of task {missing[0][0]!r} not found{more}", fix=fix)


def build(p: beam.Pipeline, job: PrepareJob, staging_root: str, bins: int = 1) -> None:
    """Add the prepare transforms for `job` to pipeline `p`, writing under `staging_root`; `bins`: the
    groups the shards are spread over (one per local worker; 0: one per shard)."""
    tasks, files, options = job.tasks, job.files(), job.options
    pairs = [(name, split) for name, splits in job.splits.items() for split in splits]

    splits = p | "Splits" >> beam.Create(pairs)
    planned = (splits
               | "Plan" >> beam.ParDo(T.PlanSplit(tasks, options, files, job.rows_per_shard, job.num_shards))
               .with_outputs(T.DROPPED, T.ERRORS, main="units"))
    converted = (planned.units
                 | "Balance" >> U.BalanceUnits(bins)
                 | "Convert" >> beam.ParDo(T.ConvertShard(tasks, options, files, staging_root, job.lowercase,
                                                          job.train_filter, job.batch_size))
                 .with_outputs(T.IDS, T.DROPPED, T.ERRORS, main="stats"))

    duplicates = (converted.ids
                  | "GroupIds" >> beam.GroupByKey()
                  | "DuplicateIds" >> beam.FlatMap(T.duplicate_errors, files))

    split_stats = (converted.stats
                   | "SplitStats" >> beam.CombinePerKey(stats.SplitStatsFn())
                   | "ByTask" >> beam.Map(lambda kv: (kv[0][0], (kv[0][1], kv[1]))))
    drops = ((planned.dropped, converted.dropped)
             | "AllDrops" >> beam.Flatten()
             | "DropByTask" >> beam.Map(lambda d: (d["task"], d)))
    # keyed by task; `splits` ((task, split) pairs) makes every task finalized, even one without rows or drops
    _ = ({"planned": splits, "split_stats": split_stats, "drops": drops}
         | "GroupTask" >> beam.CoGroupByKey()
         | "Finalize" >> beam.ParDo(T.FinalizeTask(staging_root, job.splits, options)))

    _ = ((planned.errors, converted.errors, duplicates)
         | "AllErrors" >> beam.Flatten()
         | "CollectErrors" >> U.Gather()
         | "WriteErrors" >> beam.Map(T.write_errors, staging_root))


@dataclass
class PrepareResult:
    stats: dict[str, dict]  # task -> stats.json content
    counters: dict[str, int]
    seconds: float
    written: list[Path]


def run(job: PrepareJob, cfg: PrepareConfig, beam_args: Sequence[str] = ()) -> PrepareResult:
    """Run the prepare pipeline for `job` and swap its output into place; raises DataError on bad input
    (nothing under ``job.out`` changes then)."""
    check_raw_files(job)
    options = beam_options.pipeline_options(cfg, beam_args)
    start = time.perf_counter()
    with sinks.Staging(job.out) as staging:
        LOG.info("preparing %s -> %s (runner %s, staging %s)", ", ".join(f"{t}[{'/'.join(s)}]" for t, s in job.splits.items()),
                 job.out, beam_options.runner_name(options), staging.root.name)
        with beam_options.job_runner(options) as (runner, bins):  # closed (workers idle) before the staging goes
            p = beam.Pipeline(runner=runner, options=options)
            build(p, job, str(staging.root), bins)
            try:
                result = beam_options.run_pipeline(p)
            except Exception as exc:  # a full disk while a worker wrote: one line naming the output file
                written = sinks.write_error_of(exc, staging.root, job.out)
                if written is None:
                    raise
                raise written from None
        sinks.remove_temporaries(staging.root)  # of a write whose worker was killed (its task ran again)
        errors_file = staging.root / "_errors.json"
        if errors_file.exists():
            raise_data_errors(json.loads(errors_file.read_text(encoding="utf-8")))
        counters = beam_options.counters(result, T.NAMESPACE)
        written, all_stats = [], {}
        for name, splits in job.splits.items():
            new_stats = stats.load(staging.task_dir(name) / "stats.json")
            if new_stats is None:
                raise DecaError(f"the pipeline wrote no stats for task {name!r} under {staging.root}; "
                                "is --out on a filesystem the workers share?")
            carried = staging.carry_over(name, splits)
            if carried:
                new_stats = stats.merge_stats(stats.load(job.out / name / "stats.json"), new_stats, carried)
                sinks.write_text(staging.task_dir(name) / "stats.json", stats.dump(new_stats))
                LOG.info("%s: kept the existing %s split(s)", name, ", ".join(carried))
            all_stats[name] = new_stats
        for name in job.splits:
            written.append(staging.commit(name))
    seconds = time.perf_counter() - start
    return PrepareResult(stats=all_stats, counters=counters, seconds=seconds, written=written)


def raise_data_errors(records: list[dict]) -> None:
    """Raise the first data error of a run (its file, line and fix), mentioning how many others there were."""
    first = T.error_from_record(records[0])
    if len(records) > 1:
        others = "; ".join(f"{r['path']}{':' + str(r['line']) if r['line'] else ''}" for r in records[1:4])
        first = T.error_from_record({**records[0], "message": records[0]["message"]
                                     + f"\n  ({len(records) - 1} more data error(s): {others}{' ...' if len(records) > 4 else ''})"})
    raise first


def job_summary(result: PrepareResult) -> str:
    """The end-of-run table plus totals."""
    total = sum(s["examples"] for st in result.stats.values() for s in st["splits"].values())
    dropped = sum(sum(s["dropped"].values()) for st in result.stats.values() for s in st["splits"].values())
    return (stats.format_table(result.stats)
            + f"\n{total:,} examples, {dropped:,} dropped, {len(result.stats)} task(s) in {result.seconds:.1f} s")
