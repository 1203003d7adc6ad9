"""The per-worker training function run by Ray Train's TorchTrainer (one process per worker).

Each iteration trains one token-budget batch of the task the schedule names, on every worker (each on
its own share of the data, with budget/num_workers, so the global batch matches one worker's). The
loss of worker i is its mean NLL scaled by n_i * W / N (n_i its answer tokens, N the total over workers),
so DDP's gradient average equals the gradient of the token mean over the global batch.

Every `val_every` iterations (and at the end) all workers decode their slice of each task's validation
split greedily; rank 0 scores them with eval.api, logs per-task metrics and the decaScore, and keeps
the best model (by the sum of headline metrics over the trained tasks) in <run dir>/best/.
Every `save_every` iterations (and at the end) a checkpoint goes through `ray.train.report`: rank 0
writes model, optimizer, scheduler, iteration, schedule position and best score (state.pt), and every
rank writes its data-order state and RNG states (rank<r>.pt). On a restart, `ray.train.get_checkpoint()`
gives the merged directory and training continues exactly where it stopped.
With `train.ema_decay`, every worker also keeps a moving average of the weights (in the checkpoint too);
validation and the best model use the average.
With `train.max_minutes`, the workers agree at each log step whether the time is up and then stop
together (final validation and checkpoint included).
"""
from __future__ import annotations

import logging
import math
import os
import random
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch

from deca.config import Params, from_dict
from train.data import MultiTaskData, read_share, validation_batches
from train.optim import WeightAverage, build_optimizer, build_scheduler, clip_gradients
from train.schedule import Position, from_config

log = logging.getLogger(__name__)

TRAIN_COLUMNS = ("id", "task", "context_tokens", "question_tokens", "answer_tokens")


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The model inside a DistributedDataParallel wrapper (or the model itself)."""
    return getattr(model, "module", model)


def rng_state() -> dict[str, Any]:
    state = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    torch.set_rng_state(state["torch"])
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


class Distributed:
    """Collectives that degrade to no-ops on a single worker."""

    def __init__(self, rank: int, world: int, device: torch.device):
        self.rank, self.world, self.device = rank, world, device
        self.active = world > 1 and torch.distributed.is_available() and torch.distributed.is_initialized()

    def sum(self, values: list[float]) -> list[float]:
        if not self.active:
            return list(values)
        t = torch.tensor(values, dtype=torch.float64, device=self.device)
        torch.distributed.all_reduce(t)
        return t.tolist()

    def gather(self, obj: Any) -> list[Any]:
        if not self.active:
            return [obj]
        out: list[Any] = [None] * self.world
        torch.distributed.all_gather_object(out, obj)
        return out


class Validator:
    """Greedy decoding of each task's validation split, shared out across workers, scored on rank 0."""

    def __init__(self, processed_dir: str, tasks: list[str], vocab, params: Params, dist: Distributed):
        self.vocab, self.params, self.dist = vocab, params, dist
        limit = params.train.max_val_examples
        self.tables = {t: read_share(processed_dir, t, "validation", limit=limit) for t in tasks}
        self.gold = {t: tab.to_pylist() for t, tab in self.tables.items()} if dist.rank == 0 else {}

    @torch.no_grad()
    def run(self, model: torch.nn.Module, device: torch.device) -> dict[str, dict] | None:
        """Per-task results of eval.api.score_task on rank 0 (None on other ranks)."""
        from train.batch import collate

        core = unwrap(model)
        was_training = core.training
        core.eval()
        mine: dict[str, dict[str, str]] = {}
        try:
            with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
                for task, table in self.tables.items():
                    preds: dict[str, str] = {}
                    batches = validation_batches(table, self.params.train.val_batch_size)
                    for batch_idx in batches[self.dist.rank::self.dist.world]:
                        rows = table.take(batch_idx).to_pylist()
                        out = core.greedy(collate(rows, self.vocab, device), self.params.model.max_answer_length)
                        preds.update((str(r["id"]), text) for r, text in zip(rows, out.texts))
                    mine[task] = preds
        finally:
            core.train(was_training)
        gathered = self.dist.gather(mine)
        if self.dist.rank != 0:
            return None
        from eval.api import score_task

        results = {}
        for task in self.tables:
            preds = {k: v for part in gathered for k, v in part[task].items()}
            results[task] = score_task(task, preds, self.gold[task])
        return results


def validation_metrics(results: dict[str, dict]) -> tuple[dict[str, float], float]:
    """MLflow metrics of a validation round and the selection score (sum of headlines, trained tasks)."""
    from eval.api import decascore

    metrics: dict[str, float] = {}
    for task, res in results.items():
        for name, value in res["metrics"].items():
            if isinstance(value, (int, float)) and math.isfinite(value):
                metrics[f"val/{task}/{name}"] = float(value)
        metrics[f"val/{task}/headline"] = float(res["headline"]["value"])
    score = sum(float(r["headline"]["value"]) for r in results.values())
    metrics["val/score"] = score
    metrics["val/decascore"] = float(decascore(results)["decascore"])
    return metrics, score


def save_best(run_dir: Path, model: torch.nn.Module, params: Params, extra: dict[str, Any]) -> Path:
    """Write the best model to <run_dir>/best/model.pt (train.checkpoint format, what `deca evaluate` loads).

    The file is written under a temporary name and renamed, so best/ always holds a complete model.
    """
    import dataclasses

    from train.checkpoint import save_checkpoint

    return save_checkpoint(run_dir / "best" / "model.pt", unwrap(model),
                           {**extra, "params": dataclasses.asdict(params)})


class Progress:
    """Fire-and-forget progress messages from rank 0 to the driver's progress bar (a Ray actor)."""

    def __init__(self, sink, min_interval: float = 0.5):
        self.sink, self.min_interval, self.last = sink, min_interval, 0.0

    def push(self, force: bool = False, **values: Any) -> None:
        now = time.monotonic()
        if self.sink is None or (not force and now - self.last < self.min_interval):
            return
        self.last = now
        self.sink.push.remote(values)


def train_loop_per_worker(config: dict[str, Any]) -> None:
    """The Ray Train worker function. `config` comes from train.trainer.loop_config."""
    import ray.train
    import ray.train.torch

    from train.batch import collate
    from train.checkpoint import check_vectors
    from train.model import build_model, vector_sources
    from train.tracking import RunLogger, plot_run
    from train.vocab import Vocab

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    params: Params = from_dict(Params, config["params"])
    tc = params.train
    torch.set_num_threads(max(1, int(tc.cpus_per_worker)))
    device = ray.train.torch.get_device()
    dist = Distributed(rank, world, device)
    run_dir = Path(config["run_dir"])
    tasks: list[str] = config["tasks"]

    vocab = Vocab.load(config["vocab_path"], params.model.max_generative_vocab)
    torch.manual_seed(tc.seed)  # identical initial weights on every worker and for any worker count
    model = build_model(params.model, vocab)
    model = ray.train.torch.prepare_model(
        model, parallel_strategy_kwargs={"find_unused_parameters": tc.find_unused_parameters})
    core = unwrap(model)
    optimizer = build_optimizer(core.parameters(), tc)
    scheduler = build_scheduler(optimizer, tc)
    average = WeightAverage(core, tc.ema_decay) if tc.ema_decay else None
    schedule = from_config(tc, tasks)
    data = MultiTaskData(config["processed_dir"], schedule.tasks, max(1, tc.token_budget // world), tc.seed,
                         rank, world, tc.pool_batches, columns=TRAIN_COLUMNS)
    validator = Validator(config["processed_dir"], schedule.tasks, vocab, params, dist)
    torch.manual_seed(tc.seed * 1009 + rank + 1)  # per-worker dropout stream
    random.seed(tc.seed + rank)
    np.random.seed(tc.seed + rank)

    iteration, best_score, best_iteration = 0, None, None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            state = torch.load(Path(d) / "state.pt", map_location=device, weights_only=False)
            mine = Path(d) / f"rank{rank}.pt"
            if not mine.exists():
                n = state["world_size"]
                raise RuntimeError(f"checkpoint {d} has no state for worker {rank}: it was written by "
                                   f"{n} workers; resume with train.num_workers={n}")
            worker_state = torch.load(mine, map_location="cpu", weights_only=False)
        if state["vocab_fingerprint"] != vocab.fingerprint:
            raise RuntimeError("the checkpoint was trained with another vocabulary "
                               f"({state['vocab_fingerprint'][:12]} != {vocab.fingerprint[:12]})")
        check_vectors(d, state["vectors"], vector_sources(core))
        core.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if average is not None:
            average.load_state_dict(state["average"])
        iteration, best_score, best_iteration = state["iteration"], state["best_score"], state["best_iteration"]
        if state["position"] != schedule.position(iteration).to_dict():
            log.warning("the schedule changed since the checkpoint: continuing at %s", schedule.position(iteration))
        data.load_state_dict(worker_state["data"])
        set_rng_state(worker_state["rng"])

    logger = RunLogger(config["tracking_uri"], config["run_id"]) if rank == 0 else None
    progress = Progress(config.get("progress") if rank == 0 else None)
    fail_at = config.get("fail_at")
    if logger:
        logger.tag("schedule", schedule.describe())
        logger.tag("workers", world)
        if checkpoint is not None:
            logger.tag("resumed_from_iteration", iteration)
            if iteration > 0:
                logger.assume_phase(schedule.position(iteration - 1).phase)
        log.info("training %s from iteration %d on %d worker(s); schedule %s", tasks, iteration, world,
                 schedule.describe())

    acc: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])  # task -> [loss*tokens, answer tokens]
    out_of_time = False
    window = {"tokens": 0.0, "examples": 0.0, "time": 0.0}
    last_val = -1
    last_save = iteration if checkpoint is not None else -1
    last_loss = float("nan")

    def checkpoint_now(metrics: dict[str, Any]) -> None:
        nonlocal last_save
        with tempfile.TemporaryDirectory(prefix="deca-ckpt-") as tmp:
            if rank == 0:
                torch.save({"model": core.state_dict(), "optimizer": optimizer.state_dict(),
                            "scheduler": scheduler.state_dict(), "iteration": iteration,
                            "position": schedule.position(iteration).to_dict(), "best_score": best_score,
                            "best_iteration": best_iteration, "world_size": world,
                            "vocab_fingerprint": vocab.fingerprint, "vectors": vector_sources(core), "tasks": tasks,
                            "average": average.state_dict() if average else None}, Path(tmp) / "state.pt")
            torch.save({"data": data.state_dict(), "rng": rng_state()}, Path(tmp) / f"rank{rank}.pt")
            ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(tmp),
                             checkpoint_dir_name=f"checkpoint_{iteration:08d}")
        last_save = iteration

    def validate() -> dict[str, float]:
        nonlocal best_score, best_iteration, last_val
        progress.push(force=True, iteration=iteration, total=tc.iterations, event="validating")
        if average is not None:
            average.swap()  # validate (and keep as best) the averaged weights
        try:
            results = validator.run(model, device)
            last_val = iteration
            if rank != 0:
                return {}
            metrics, score = validation_metrics(results)
            if best_score is None or score > best_score:
                best_score, best_iteration = score, iteration
                save_best(run_dir, model, params, {"iteration": iteration, "score": score, "results": results})
        finally:
            if average is not None:
                average.swap()
        metrics["val/best_score"] = best_score
        logger.metrics(metrics, iteration)
        return metrics

    position: Position | None = None
    deadline = time.monotonic() + 60 * tc.max_minutes if tc.max_minutes else None
    model.train()
    while iteration < tc.iterations:
        position = schedule.position(iteration)
        if logger:
            logger.phase(position.phase, position.phase_name, iteration)
        start = time.perf_counter()
        rows, tokens = data.next_batch(position.task)
        batch = collate(rows, vocab, device)
        n_local = float(batch.answer_tokens)
        n_total = dist.sum([n_local])[0] if dist.active else n_local
        optimizer.zero_grad(set_to_none=True)
        loss = model(batch)
        (loss * (n_local * world / n_total)).backward()
        clip_gradients(core.parameters(), tc.grad_clip)
        lr = optimizer.param_groups[0]["lr"]
        optimizer.step()
        scheduler.step()
        if average is not None:
            average.update()
        iteration += 1
        last_loss = float(loss.detach())
        acc[position.task][0] += last_loss * n_local
        acc[position.task][1] += n_local
        window["tokens"] += tokens
        window["examples"] += len(rows)
        window["time"] += time.perf_counter() - start

        if fail_at and iteration == fail_at["iteration"] and rank == world - 1 \
                and not os.path.exists(fail_at["marker"]):
            Path(fail_at["marker"]).write_text(f"worker {rank} killed at iteration {iteration}\n")
            # Ray Train's controller registers reported checkpoints when it polls the workers (every
            # RAY_TRAIN_HEALTH_CHECK_INTERVAL_S, 2 s): wait that long so that the last checkpoint counts,
            # as it would in a real run where checkpoints are minutes apart.
            time.sleep(float(os.environ.get("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", 2.0)) + 1.0)
            os._exit(1)  # an injected hard failure: the process dies without cleanup

        if iteration % tc.log_every == 0 or iteration == tc.iterations:
            names = sorted(acc)
            out_of_time = float(deadline is not None and time.monotonic() > deadline)
            sums = dist.sum([v for t in names for v in acc[t]]
                            + [window["tokens"], window["examples"], out_of_time])
            out_of_time = sums.pop() > 0  # any worker out of time: all stop at this same iteration
            elapsed = dist.sum([window["time"]])[0] / world
            if logger:
                metrics = {f"train/loss/{t}": sums[2 * i] / max(sums[2 * i + 1], 1.0) for i, t in enumerate(names)}
                metrics["train/loss"] = sum(sums[0:-2:2]) / max(sum(sums[1:-2:2]), 1.0)
                metrics["train/lr"] = lr
                metrics["train/tokens_per_s"] = sums[-2] / max(elapsed, 1e-9)
                metrics["train/examples_per_s"] = sums[-1] / max(elapsed, 1e-9)
                logger.metrics(metrics, iteration)
                progress.push(force=True, iteration=iteration, total=tc.iterations, phase=position.phase_name,
                              loss=metrics["train/loss"], tokens_per_s=metrics["train/tokens_per_s"])
            acc.clear()
            window = {"tokens": 0.0, "examples": 0.0, "time": 0.0}
        else:
            progress.push(iteration=iteration, total=tc.iterations, phase=position.phase_name, loss=last_loss)

        if tc.val_every > 0 and iteration % tc.val_every == 0:
            validate()
        if tc.save_every > 0 and iteration % tc.save_every == 0:
            checkpoint_now({"iteration": iteration, "loss": last_loss, "best_score": best_score})
        if out_of_time:
            if logger:
                logger.tag("stopped_by_time_at", iteration)
            break

    if last_val != iteration:
        validate()
    if last_save != iteration:
        checkpoint_now({"iteration": iteration, "loss": last_loss, "best_score": best_score})
    if logger:
        best = run_dir / "best"
        if best.exists():
            logger.artifact(best, "best_checkpoint")
        with tempfile.TemporaryDirectory() as tmp:
            for png in plot_run(config["tracking_uri"], config["run_id"], tmp):
                logger.artifact(png, "plots")
        logger.tag("best_iteration", best_iteration)
        progress.push(force=True, iteration=iteration, total=tc.iterations, event="done")
