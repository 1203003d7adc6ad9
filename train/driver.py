"""The driver side of `deca train`: checks, the MLflow run, Ray, the TorchTrainer and the progress bar.

Locally `fit` starts its own Ray (quiet, no dashboard) unless Ray is already initialized; with
RAY_ADDRESS set it joins that cluster (train/ray_session.py, which also runs Ray Train's fit in a helper
thread). With `train.num_workers: 0` it starts no Ray at all: Ray Train's local mode runs the same worker
function in this process (train/local_mode.py). Runs live in
<train.storage_dir>/<run name>/ (Ray Train's checkpoints, the best model in best/, and deca_run.json naming
the MLflow run). A new run refuses an existing name; ``resume=True`` reuses the name: Ray Train finds the
run's checkpoints there and the workers continue from the latest one, logging into the same MLflow run.

On multi-node clusters storage_dir must be shared storage and MLFLOW_TRACKING_URI a server every node
reaches.
"""
from __future__ import annotations

import dataclasses
import errno
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from deca.checks import check_params, declare_quietly
from deca.config import Params
from deca.errors import ConfigError, DataError, DecaError, interrupted
from deca.io import write_json
from deca.metric_logging import check_server
from deca.registry import resolve_tasks
from deca.runs import RUN_FILE, best_model_path, latest_run, model_file, read_run_file
from deca.schema import shard_rows, split_dir
from eval.api import check_metrics
from mqan.vectors import open_source
from train.choices import allowed_values
from train.local_mode import LocalSink, StopWhenSet, check_environment, is_local
from train.progress import ProgressBar, resumed_iteration
from train.ray_session import check_resources, fit_in_thread, progress_sink, start_ray
from train.resume import auto_resume, params_for_resume, registered_checkpoints
from train.schedule import Schedule, from_config
from train.tracking import end_run, record_lineage, reopen_run, start_run, tracking_uri, vocab_fingerprint
from train.worker import train_loop_per_worker
from train.workers import describe, is_elastic, min_workers_watch, worker_range

log = logging.getLogger(__name__)


def check_training(params: Params, origin: Mapping[str, str] | None = None) -> Schedule:
    """Every check `deca validate` runs for training (deca.checks.check_params: the values, the custom tasks,
    the task names, each task's metric, the strategy and its phases against the budget), once, with the params'
    custom tasks declared in this process; returns the schedule the check built. `origin` says where each
    value came from (deca.config.read_params)."""
    declare_quietly(params)
    built: list[Schedule] = []

    def schedule(train_cfg, tasks):
        built.append(from_config(train_cfg, tasks))
        return built[-1]

    check_params(params, origin, commands=["train"], choices=allowed_values(), schedule=schedule,
                 metrics=check_metrics)
    return built[-1]


class TrainingFailed(DecaError):
    """Training stopped with an error on a worker after the allowed restarts."""


@dataclass
class Outcome:
    """What a finished training job left behind."""

    run_name: str
    run_dir: Path
    mlflow_run_id: str
    tracking_uri: str
    checkpoint: str | None  # directory of the latest Ray Train checkpoint
    best: Path | None  # directory of the best model (best/model.pt)
    metrics: dict[str, Any]


def resolve_paths(params: Params, project: Path) -> Params:
    """A copy of `params` with data paths and the storage directory made absolute (workers run elsewhere)."""
    def absolute(p: str | None) -> str | None:
        return None if p is None else str((project / p).resolve()) if not Path(p).is_absolute() else p

    data = dataclasses.replace(params.data, processed_dir=absolute(params.data.processed_dir),
                               vocab_path=absolute(params.data.vocab_path))
    train = dataclasses.replace(params.train, storage_dir=absolute(params.train.storage_dir),
                                init_from=absolute(params.train.init_from))
    return dataclasses.replace(params, data=data, train=train)


def check_inputs(params: Params, tasks: list[str]) -> None:
    """Fail before starting Ray when the vocabulary, a processed split, the init_from checkpoint or a vector
    source is missing (the params themselves: check_training)."""
    if not Path(params.data.vocab_path).exists():
        raise DataError(params.data.vocab_path, "vocabulary not found", fix="run `deca prepare` first")
    for task in tasks:
        for split in ("train", "validation"):
            d = split_dir(params.data.processed_dir, task, split)
            shards = sorted(d.glob("*.parquet"))
            if not shards:
                raise DataError(d, f"no processed {split} split for task {task!r}",
                                fix=f"run `deca prepare --tasks {task}` or remove it from train.tasks")
            rows = sum(shard_rows(f) for f in shards)  # a truncated shard is named here, before Ray starts
            if split == "train" and rows == 0:
                raise DataError(d, f"the training split of task {task!r} has no examples",
                                fix=f"check its raw files and `deca prepare --tasks {task}` (dropped.parquet says "
                                    "why rows were dropped), or remove it from train.tasks")
    init = params.train.init_from
    if init:
        if not model_file(init).is_file():
            raise DataError(init, "train.init_from: no checkpoint there", fix="give a model.pt file or a run "
                                                                            "directory with best/model.pt")

    for source in (params.model.word_vectors, params.model.char_vectors):
        if source:
            open_source(source, progress=True)  # a missing or corrupt source fails here, before Ray starts


def auto_resume_run(params: Params, run_name: str, project: str | Path | None = None) -> bool:
    """Whether `deca train --auto-resume --run-name NAME` continues NAME (see train.resume.auto_resume)."""
    params = resolve_paths(params, Path(project or Path.cwd()).resolve())
    return auto_resume(Path(params.train.storage_dir) / run_name, params)


def default_run_name(params: Params) -> str:
    return f"{params.train.strategy}-{time.strftime('%Y%m%d-%H%M%S')}"


def fit(params: Params, *, run_name: str | None = None, resume: bool = False, progress: bool = True,
        project: str | Path | None = None, overrides: dict[str, Any] | None = None,
        hooks: Sequence[Callable] = (), schedule: Schedule | None = None,
        marks: Mapping[str, str] | None = None) -> Outcome:
    """Train as `params.train` says; see the module docstring. Returns where everything went.

    `schedule`: what check_training returned for these params in this process (they are not checked again);
    None: they are checked here. With `resume`, the run continues with the params it recorded, plus
    `overrides` (train/resume.py); those are checked again only where they differ from `params`.
    `hooks` are called with the worker's TrainingRecipe after every step (train/recipe.py; tests).
    `marks` go into a new run's record (deca_run.json) and, as ``deca.<key>`` tags, its MLflow run (a
    reproduction's deca.runs.REPRODUCTION).
    A failure marks the MLflow run FAILED (KILLED on Ctrl-C); a new run that wrote no checkpoint leaves no
    run folder behind (it would count as the latest run for predict and serve)."""

    project = Path(project or Path.cwd()).resolve()
    params, run_name, uri, run_id = open_run(resolve_paths(params, project), run_name, resume, project,
                                             overrides or {}, schedule, marks)
    run_dir = Path(params.train.storage_dir) / run_name
    try:
        result = run_trainer(params, run_name, run_dir, uri, run_id, resume, progress, hooks)
    except BaseException as exc:
        end_run(uri, run_id, "KILLED" if interrupted(exc) else "FAILED")
        kept = resume or not discard_unstarted(run_dir)
        if interrupted(exc) or not isinstance(exc, Exception) or isinstance(exc, ConfigError):
            raise
        raise training_failed(exc, run_name, run_dir, kept) from exc
    end_run(uri, run_id, "FINISHED")
    write_json(run_dir / RUN_FILE, {**read_run_file(run_dir / RUN_FILE), "finished": True})
    best = run_dir / "best"
    if best.exists():  # every finished run's best model is an MLflow model; registered when a name is set
        register_model(run_dir, params.train.register_model, project)
    return Outcome(run_name, run_dir, run_id, uri, result.checkpoint.path if result.checkpoint else None,
                   best if best.exists() else None, dict(result.metrics or {}))


def run_trainer(params: Params, run_name: str, run_dir: Path, uri: str, run_id: str, resume: bool,
                progress: bool, hooks: Sequence[Callable]):
    """Start Ray (unless running), check its resources and run the TorchTrainer; Ray Train's result. In local
    mode (train.num_workers: 0) no Ray is started and the progress messages stay in this process."""
    local = is_local(params)
    if local:
        check_environment()
        logging.getLogger("ray.train").setLevel(logging.WARNING)  # as LoggingConfig quiets workers' logs
    started = not local and start_ray(params)
    stop = threading.Event() if local else None
    hooks = [*hooks, StopWhenSet(stop)] if stop else hooks
    try:
        if not local:
            check_resources(params)
        sink = LocalSink() if local else progress_sink()
        config = {"params": dataclasses.asdict(params), "tasks": resolve_tasks(params.train.tasks),
                  "run_dir": str(run_dir), "tracking_uri": uri, "run_id": run_id, "progress": sink,
                  "hooks": list(hooks)}
        trainer = build_trainer(params, run_name, config)
        with ProgressBar(sink, params.train.iterations, progress, params.train.max_minutes,
                         start=resumed_iteration(run_dir) if resume else 0):
            watch = None
            if is_elastic(params):
                import ray

                watch = min_workers_watch(params, ray.nodes)
            return fit_in_thread(trainer, stop, watch)
    finally:
        if started:
            import ray

            ray.shutdown()


def discard_unstarted(run_dir: Path) -> bool:
    """Remove a new run's folder when training wrote nothing to resume from (no checkpoint, no best model);
    whether it was removed."""

    if not run_dir.is_dir() or best_model_path(run_dir).is_file() or registered_checkpoints(run_dir):
        return False  # a checkpoint folder Ray did not register was cut off (a full disk): nothing to resume
    shutil.rmtree(run_dir, ignore_errors=True)
    return not run_dir.exists()


def worker_cause(exc: BaseException) -> BaseException | None:
    """The DecaError or OSError a worker raised inside what Ray Train re-raised (its worker_failures, a
    RayTaskError's cause, the exception chain), else None."""
    todo, seen = [exc], set()
    while todo:
        e = todo.pop(0)
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        inner = getattr(e, "cause", None)
        if isinstance(inner, BaseException):  # a RayTaskError: its text is the worker's traceback
            todo.append(inner)
            continue
        if isinstance(e, (DecaError, OSError)):
            return e
        todo.extend(list((getattr(e, "worker_failures", None) or {}).values()))
        todo.extend([getattr(e, "controller_failure", None), e.__cause__, e.__context__])
    return None


def training_failed(exc: BaseException, run_name: str, run_dir: Path, kept: bool) -> TrainingFailed:
    """One line for a failed training (the worker's own error when there is one), what to fix, and where
    its checkpoints are (or that no run folder was left)."""

    cause = worker_cause(exc)
    if isinstance(cause, OSError) and cause.errno in (errno.ENOSPC, errno.EDQUOT):
        where = Path(cause.filename or run_dir)
        elsewhere = " or set train.storage_dir to a disk with room" if where.is_relative_to(run_dir.parent) else ""
        what = (f"no space left on the device of {where}\n  fix: free space there{elsewhere}, then "
                + ("resume" if kept else "train again"))
    elif isinstance(cause, OSError) and not isinstance(cause, DecaError):
        what = f"{cause.filename + ': ' if cause.filename else ''}{cause.strerror or cause}"
    elif cause is not None:
        what = str(cause)
    else:
        what = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0][:300]} (`deca -v train ...` " \
               "for the traceback)"
    after = (f"\n  checkpoints: {run_dir}; continue with `deca train --resume {run_name}`" if kept
             else f"\n  no checkpoint was written: the run folder {run_dir} was removed")
    return TrainingFailed(f"training run {run_name!r} failed: {what}{after}")


def register_model(run_dir: Path, name: str | None, project: Path) -> bool:
    """Log the finished run's best model as the MLflow model runs:/<id>/model and, with `name`
    (train.register_model), register it as a new version of `name`, with `deca register`
    (infer/registry.py; in a child process: training never imports inference). A failure is a warning,
    not a failed training: the run is there, logged or not."""

    command = [sys.executable, "-m", "deca.cli", "register", "--run", str(run_dir)]
    command += ["--name", name] if name else ["--set", "train.register_model=null"]
    done = subprocess.run(command, cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode == 0:
        print(done.stdout, end="", flush=True)
        return True
    what, how = (f"registered as {name!r}", f" --name {name}") if name else ("logged as an MLflow model", "")
    print(f"{done.stdout.rstrip()}\nwarning: the model of run {run_dir.name} was not {what}; "
          f"once fixed: deca register --run {run_dir}{how}", file=sys.stderr)
    return False


def open_run(params: Params, run_name: str | None, resume: bool, project: Path, overrides: dict[str, Any],
             schedule: Schedule | None = None,
             marks: Mapping[str, str] | None = None) -> tuple[Params, str, str, str]:
    """Check the params (unless `schedule` says they were: see fit) and the inputs, and create (or, with
    `resume`, reopen) the run: (params, run name, tracking URI, MLflow run id). A new run writes
    <storage>/<name>/deca_run.json; an existing name is refused."""

    storage = Path(params.train.storage_dir)
    if resume:
        run_name = run_name or latest_run(storage).name
        run_file = storage / run_name / RUN_FILE
        if not run_file.exists():
            raise ConfigError(f"--resume: {run_file} not found; is {run_name!r} a run under {storage}?")
        recorded = resolve_paths(params_for_resume(run_file, params, overrides), project)
        schedule, params = (schedule if recorded == params else None), recorded
        info = read_run_file(run_file)
        check_server(info["tracking_uri"])
        reopen_run(info["tracking_uri"], info["mlflow_run_id"])
    if schedule is None:  # configuration errors surface before Ray starts; the custom tasks of the params
        schedule = check_training(params, {k: f"--set {k}={v}" for k, v in overrides.items()})  # trained with
    tc, marks = params.train, dict(marks or {})
    tasks = resolve_tasks(tc.tasks)
    check_inputs(params, tasks)
    if resume:
        return params, run_name, info["tracking_uri"], info["mlflow_run_id"]
    run_name = run_name or default_run_name(params)
    if (storage / run_name).exists():
        raise ConfigError(f"run {run_name!r} already exists under {storage}; "
                          f"pass --resume to continue it or choose another --run-name")
    uri = tracking_uri(project)
    check_server(uri)  # a server that is down fails here, in a second, not after MLflow's minutes of retries
    # a DVC experiment's run is named after the experiment (every one trains the run folder `pipeline`)
    mlflow_name = os.environ.get("DVC_EXP_NAME") or run_name
    vocab = vocab_fingerprint(params.data.vocab_path)
    run_id = start_run(uri, tc.experiment, mlflow_name, dataclasses.asdict(params), project=project, vocab=vocab,
                       tags={"strategy": tc.strategy, "tasks": ",".join(tasks), "schedule": schedule.describe(),
                             "workers": describe(tc.num_workers), **{f"deca.{k}": v for k, v in marks.items()}})
    try:  # the run folder is made with its record, and only then (a full disk leaves neither)
        record_lineage(uri, run_id, params, tasks, project, vocab)
        write_json(storage / run_name / RUN_FILE,
                   {"mlflow_run_id": run_id, "tracking_uri": uri, "experiment": tc.experiment, "tasks": tasks,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "params": dataclasses.asdict(params), **marks})
    except BaseException:
        end_run(uri, run_id, "FAILED")
        raise
    return params, run_name, uri, run_id


def build_trainer(params: Params, run_name: str, config: dict[str, Any]):
    """The TorchTrainer: workers (a number, or an elastic (min, max)) and resources from params.train, a process
    group over gloo (CPU) or NCCL (GPU); with
    train.num_workers 0, Ray Train's local mode (no resources, placement or FailureConfig: deca.checks refuses
    those together with it)."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    tc = params.train
    resources = {"CPU": tc.cpus_per_worker}
    if tc.use_gpu:
        resources["GPU"] = tc.gpus_per_worker
    low, high = worker_range(tc.num_workers)
    elastic = {"num_workers": (low, high), "elastic_resize_monitor_interval_s": tc.resize_every_s} \
        if is_elastic(params) else {"num_workers": low}
    scaling = ScalingConfig(num_workers=0, use_gpu=tc.use_gpu) if is_local(params) else \
        ScalingConfig(**elastic, use_gpu=tc.use_gpu, resources_per_worker=resources,
                      placement_strategy=tc.placement_strategy)
    run_config_kwargs: dict[str, Any] = {}
    try:
        from ray.train.v2.api.config import LoggingConfig

        run_config_kwargs["logging_config"] = LoggingConfig(log_level="WARNING")
    except ImportError:  # older Ray Train
        pass
    return TorchTrainer(
        train_loop_per_worker,
        train_loop_config=config,
        scaling_config=scaling,
        torch_config=TorchConfig(backend="nccl" if tc.use_gpu else "gloo"),
        run_config=RunConfig(
            name=run_name, storage_path=tc.storage_dir,
            failure_config=FailureConfig(max_failures=tc.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=max(1, tc.checkpoints_to_keep)),
            **run_config_kwargs,
        ),
    )
