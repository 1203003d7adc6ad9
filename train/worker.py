"""The Ray Train worker function: a `TrainingRecipe` (train/recipe.py) wired to Ray Train and MLflow.

Ray Train's TorchTrainer runs `train_loop_per_worker` in one process per worker. It gives the recipe the
worker's rank and device (``prepare_model`` moves the model there; the recipe sums the gradients itself, see
train/workers.py), the process group, the checkpoint to resume from
(``ray.train.get_checkpoint``), and publishes the recipe's checkpoints through ``ray.train.report``.
Rank 0 logs into the run's MLflow run and, at the end, attaches the best model and the plots.
In Ray Train's local mode (`train.num_workers: 0`) the same function runs in the driver's process as rank 0
of 1; train/local_mode.py keeps its checkpoints in the run folder as Ray Train does for workers.
"""
from __future__ import annotations

import functools
import os
import tempfile
from pathlib import Path
from typing import Any

import torch

from deca.config import Params, from_dict
from deca.custom_tasks import declare
from deca.errors import WriteError
from deca.io import WRITE_ERRNOS
from deca.metric_logging import MLflowLogger
from mqan.allocator import keep_large_blocks
from train.distributed import Distributed
from train.local_mode import latest_checkpoint, persist
from train.progress import Progress
from train.recipe import TrainingRecipe
from deca.runs import best_model_path
from eval.curves import plot_run


def report_to_ray(metrics: dict[str, Any], directory: Path, iteration: int, run_dir: str | Path = "",
                  local_keep: int = 0) -> None:
    """Publish a checkpoint directory to Ray Train (which copies it into the run's storage, `run_dir`); a full
    disk there is a WriteError naming the checkpoint folder (Ray's copy names no file). In local mode
    (`local_keep`: train.checkpoints_to_keep) Ray Train copies nothing: it is copied and registered here first."""
    import ray.train

    name = f"checkpoint_{iteration:08d}"
    try:
        if local_keep:
            directory = persist(directory, metrics, name, run_dir, local_keep)
        ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(str(directory)),
                         checkpoint_dir_name=name)
    except OSError as exc:
        if isinstance(exc, WriteError) or exc.errno not in WRITE_ERRNOS or not run_dir:
            raise
        raise WriteError(exc.errno, os.strerror(exc.errno), Path(run_dir) / name, where=Path(run_dir).parent) from exc


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function. `config` is the dict that train.driver.build_trainer hands to Ray as
    `train_loop_config`."""
    import ray.train
    import ray.train.torch

    keep_large_blocks()
    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    params: Params = from_dict(Params, config["params"])
    declare(params)  # its custom tasks resolve in this worker process too
    torch.set_num_threads(max(1, int(params.train.cpus_per_worker)))
    dist = Distributed(rank, ctx.get_world_size(), ray.train.torch.get_device())
    logger = MLflowLogger(config["tracking_uri"], config["run_id"]) if rank == 0 else None
    recipe = TrainingRecipe(params, config["tasks"], run_dir=config["run_dir"], dist=dist, logger=logger,
                            progress=Progress(config.get("progress") if rank == 0 else None),
                            hooks=config.get("hooks", ()))

    def wrap(model: torch.nn.Module) -> torch.nn.Module:  # on the device; no DDP: the recipe sums the gradients
        return ray.train.torch.prepare_model(model, parallel_strategy=None)

    local = params.train.num_workers == 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is None and local:  # local mode restores nothing itself
        latest = latest_checkpoint(config["run_dir"])
        checkpoint = ray.train.Checkpoint.from_directory(str(latest)) if latest else None
    if checkpoint is None:
        recipe.setup(wrap=wrap)
    else:
        with checkpoint.as_directory() as directory:
            recipe.setup(directory, wrap=wrap)
        if logger:  # one point per start from a checkpoint: a restart after a failure, or --resume
            logger.log_metrics({"resumed_from_iteration": recipe.iteration}, recipe.iteration)
    record_placement(dist, logger, local)
    keep = max(1, params.train.checkpoints_to_keep) if local else 0
    recipe.train(publish=functools.partial(report_to_ray, run_dir=config["run_dir"], local_keep=keep))
    if logger:
        attach_results(recipe, logger, config)
    recipe.cleanup()


def record_placement(dist: Distributed, logger: MLflowLogger | None, local: bool = False) -> None:
    """Tag `worker_nodes`: the Ray node of every worker, in rank order, as <node IP>/<node id> (rewritten by
    every attempt, so after a restart it names the nodes that finished the run); in local mode, where no Ray
    node runs it, <IP>/local."""
    import ray

    where = "local" if local else ray.get_runtime_context().get_node_id()
    nodes = dist.gather(f"{ray.util.get_node_ip_address()}/{where}")
    if logger:
        logger.set_tag("worker_nodes", ",".join(nodes))


def attach_results(recipe: TrainingRecipe, logger: MLflowLogger, config: dict[str, Any]) -> None:
    """The best model, the training plots and the best iteration, into the MLflow run."""

    best = best_model_path(config["run_dir"]).parent
    if best.exists():
        logger.log_artifact(best, "best_checkpoint")
    with tempfile.TemporaryDirectory() as tmp:
        for png in plot_run(config["tracking_uri"], config["run_id"], tmp):
            logger.log_artifact(png, "plots")
    logger.set_tag("best_iteration", recipe.best_iteration)
