"""The worker side of training as one recipe: setup, train_step, validate, save/load state, the loop.

Shaped after torchtune's ``recipes/full_finetune_distributed.py``. Every worker (a Ray Train process, or
a plain process for benchmarks, experiments and tests) builds one `TrainingRecipe` and calls `train`.

Each iteration trains one global token-budget batch of the task the schedule names: every worker cuts the
same global batches from the whole data and trains its share of each (train/workers.py). The loss of worker
i is its mean NLL scaled by n_i / N (n_i its answer tokens, N the total over workers) and the gradients are
summed over the workers (Distributed.sum_gradients), so the update is the gradient of the token mean over the
global batch, whatever the number of workers (up to float reduction order). Exact with model.dropout and
model.word_dropout 0: dropout masks are drawn by each worker from its own generator (seeded with the rank),
so with dropout the runs on different numbers of workers are equal in distribution only.

Every `val_every` iterations (and at the end) all workers decode their slice of each task's validation
split (train/validation.py); rank 0 logs the metrics and keeps the best model (by the sum of headline
metrics over the trained tasks) in <run dir>/best/. Every `save_every` iterations (and at the end) the
resumable state (train/state.py) is handed to `publish` (Ray Train's `report` in train/worker.py);
`load_state` continues exactly where it stopped. With `train.ema_decay` every worker also keeps a moving
average of the weights; validation and the best model use it. With `train.max_minutes` the workers agree
at each log step whether the time is up and stop together (final validation and checkpoint included).
`hooks` are called with the recipe after every step (tests use one to kill a worker); `best_hooks` on rank 0
after each validation round that found a new best model (experiments/single_task.py keeps that round's
per-example statistics).
"""
from __future__ import annotations

import dataclasses
import logging
import random
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from deca.config import Params
from deca.custom_tasks import declare
from deca.errors import ConfigError
from deca.metric_logging import MemoryLogger, MetricLogger
from mqan.batch import collate
from mqan import precision
from mqan.checkpoint import check_vectors, init_weights, save_checkpoint
from train.data import MultiTaskData
from train.distributed import Distributed, rng_state, set_rng_state, unwrap
from mqan.model import build_model, vector_sources
from train.optim import WeightAverage, build_optimizer, build_scheduler, clip_gradients
from train.progress import Progress
from deca.registry import resolve_tasks
from deca.runs import best_model_path, model_file
from train.schedule import from_config
from train.state import load_training_state, save_training_state
from train.tracking import PhaseLog
from train.validation import Validator, selection_score, validation_metrics
from mqan.vocab import Vocab

log = logging.getLogger(__name__)

TRAIN_COLUMNS = ("id", "task", "context_tokens", "question_tokens", "answer_tokens")
Publish = Callable[[dict[str, Any], Path, int], None]  # (metrics, checkpoint directory, iteration)


@dataclass
class Step:
    """What one training step did on this worker."""

    task: str
    loss: torch.Tensor  # mean NLL per answer token of this worker's batch (0-dim, on the device: read it only
    # when it is needed, since reading it waits for the device)
    answer_tokens: float
    tokens: int  # context + question + answer tokens
    examples: int
    seconds: float
    lr: float  # the rate this step's update used


class Window:
    """Training statistics since the last log step, summed over the workers in one named all-reduce."""

    def __init__(self):
        self.loss: dict[str, list[float]] = {}  # task -> [loss * answer tokens, answer tokens]
        self.tokens = self.examples = self.seconds = 0.0

    def add(self, step: Step) -> None:
        acc = self.loss.setdefault(step.task, [0.0, 0.0])
        acc[0] += step.loss * step.answer_tokens
        acc[1] += step.answer_tokens
        self.tokens += step.tokens
        self.examples += step.examples
        self.seconds += step.seconds

    def reduce(self, dist: Distributed, out_of_time: bool) -> tuple[dict[str, float], bool]:
        """(metrics over all workers, whether any worker is out of time)."""
        values = {"tokens": self.tokens, "examples": self.examples, "seconds": self.seconds,
                  "out_of_time": float(out_of_time)}
        for task in sorted(self.loss):
            values[f"nll/{task}"], values[f"n/{task}"] = self.loss[task]
        sums = dist.sum(values)
        elapsed = max(sums["seconds"] / dist.world, 1e-9)
        tasks = sorted(self.loss)
        metrics = {f"train/loss/{t}": sums[f"nll/{t}"] / max(sums[f"n/{t}"], 1.0) for t in tasks}
        metrics["train/loss"] = sum(sums[f"nll/{t}"] for t in tasks) / max(sum(sums[f"n/{t}"] for t in tasks), 1.0)
        metrics["train/tokens_per_s"] = sums["tokens"] / elapsed
        metrics["train/examples_per_s"] = sums["examples"] / elapsed
        return metrics, sums["out_of_time"] > 0


class TrainingRecipe:
    """Multitask MQAN training on one worker; state lives on the object (see the module docstring)."""

    def __init__(self, params: Params, tasks: Sequence[str], *, run_dir: str | Path | None = None,
                 dist: Distributed | None = None, logger: MetricLogger | None = None,
                 progress: Progress | None = None, hooks: Sequence[Callable[["TrainingRecipe"], None]] = (),
                 best_hooks: Sequence[Callable[["TrainingRecipe"], None]] = ()):
        self.params, self.tasks = params, list(tasks)
        self.run_dir = Path(run_dir) if run_dir else None
        self.dist = dist or Distributed()
        self.device = self.dist.device
        self.precision = precision.resolve(params.train.precision, self.device, "train.precision")
        self.logger = logger if self.dist.rank == 0 else None
        self.progress = progress or Progress(None)
        self.hooks, self.best_hooks = list(hooks), list(best_hooks)
        self.iteration, self.best_score, self.best_iteration = 0, None, None
        self.last_validated = self.last_saved = -1
        self.checked_unused = False

    # ------------------------------------------------------------------------------------------- setup

    def setup(self, checkpoint_dir: str | Path | None = None,
              wrap: Callable[[torch.nn.Module], torch.nn.Module] = lambda m: m) -> "TrainingRecipe":
        """Build vocabulary, model (`wrap` puts it on the device), optimizer, schedule, data; resume from `checkpoint_dir`."""
        p, tc, rank = self.params, self.params.train, self.dist.rank
        self.vocab = Vocab.load(p.data.vocab_path, p.model.max_generative_vocab)
        torch.manual_seed(tc.seed)  # identical initial weights on every worker and for any worker count
        self.model = wrap(self._initial_model().to(self.device))
        self.core = unwrap(self.model)
        self.optimizer = build_optimizer(self.core.parameters(), tc)
        self.scheduler = build_scheduler(self.optimizer, tc)
        self.average = WeightAverage(self.core, tc.ema_decay) if tc.ema_decay else None
        self.schedule = from_config(tc, self.tasks)
        self.data = MultiTaskData(p.data.processed_dir, self.schedule.tasks, tc.token_budget, tc.seed,
                                  tc.pool_batches, columns=TRAIN_COLUMNS, bucketing=tc.bucketing)
        self.validator = Validator(p.data.processed_dir, self.schedule.tasks, self.vocab, p, self.dist, self.precision)
        self._seed_rngs()
        self.phases = PhaseLog(self.logger)
        if checkpoint_dir is not None:
            self.load_state(checkpoint_dir)
            self.last_saved = self.iteration
            if self.logger:
                self.logger.set_tag("resumed_from_iteration", self.iteration)
            if self.iteration > 0:
                self.phases.assume(self.schedule.position(self.iteration - 1).phase)
        if self.logger:
            self.logger.set_tag("schedule", self.schedule.describe())
            self.logger.set_tag("workers", self.dist.world)
        return self

    def _seed_rngs(self, iteration: int = 0) -> None:
        """This worker's own dropout stream (and Python's, NumPy's), from the seed, its rank and `iteration`."""
        seed, rank = self.params.train.seed, self.dist.rank
        torch.manual_seed(seed * 1009 + rank + 1 + 7919 * iteration)
        random.seed(seed + rank + 7919 * iteration)
        np.random.seed((seed + rank + 7919 * iteration) % 2**32)

    def _initial_model(self) -> torch.nn.Module:
        """A fresh model, or with `train.init_from` a trained one (transfer; see checkpoint.init_weights)."""
        tc = self.params.train
        model = build_model(self.params.model, self.vocab)
        if not tc.init_from:
            if tc.freeze_pretrained:
                raise ConfigError("train.freeze_pretrained needs train.init_from (a model to freeze)")
            return model
        replaced = init_weights(model, model_file(tc.init_from))
        if tc.freeze_pretrained:
            if not replaced:
                raise ConfigError("train.freeze_pretrained: nothing would be trained (the vocabulary is the "
                                  "checkpoint's, so no layer was replaced)")
            for name, weight in model.named_parameters():
                weight.requires_grad_(name in replaced)
        if self.logger:
            self.logger.set_tag("init_from", tc.init_from)
            self.logger.set_tag("init_replaced", ",".join(replaced) or "none")
        return model

    # ---------------------------------------------------------------------------------------- one step

    def train_step(self) -> Step:
        """Train one batch of the task the schedule names for the current iteration; advance the iteration."""
        position = self.schedule.position(self.iteration)
        self.phases.record(position.phase, position.phase_name, self.iteration)
        start = time.perf_counter()
        rows, tokens = self.data.next_batch(position.task, self.dist.rank, self.dist.world)
        batch = collate(rows, self.vocab, self.device) if rows else None  # no rows: a batch smaller than the group
        n_local = float(batch.answer_tokens) if batch is not None else 0.0
        n_total = self.dist.sum({"n": n_local})["n"]
        self.optimizer.zero_grad(set_to_none=True)
        loss = torch.zeros((), device=self.device)
        if batch is not None:
            with precision.autocast(self.device, self.precision):  # the loss itself is reduced in fp32
                loss = self.model(batch)
            (loss * (n_local / max(n_total, 1.0))).backward()  # 1 worker: n_local / n_total is exactly 1
        self.dist.sum_gradients(list(self.core.parameters()))
        if not self.checked_unused:
            self._check_unused_parameters()
        clip_gradients(self.core.parameters(), self.params.train.grad_clip)
        lr = self.optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.scheduler.step()
        if self.average is not None:
            self.average.update()
        self.iteration += 1
        return Step(position.task, loss.detach(), n_local, tokens, len(rows),
                    time.perf_counter() - start, lr)

    def _check_unused_parameters(self) -> None:
        """After the first step's gradients are summed: with train.find_unused_parameters false every trained
        parameter must have got one (a layer that is never trained is a model bug): name any that got none."""
        self.checked_unused = True
        if self.params.train.find_unused_parameters:
            return
        unused = [n for n, p in self.core.named_parameters() if p.requires_grad and p.grad is None]
        if unused:
            raise ConfigError(f"train.find_unused_parameters is false, but {len(unused)} trained parameter(s) got no "
                              f"gradient in the first step ({', '.join(unused[:5])}{', ...' if len(unused) > 5 else ''});"
                              " set train.find_unused_parameters: true")

    # -------------------------------------------------------------------------------------- validation

    def validate(self) -> dict[str, float]:
        """Decode and score the validation splits (the averaged weights when there are), keep the best model;
        returns the metrics on rank 0 ({} elsewhere)."""
        self.progress.push(force=True, iteration=self.iteration, total=self.params.train.iterations,
                           event="validating")
        if self.average is not None:
            self.average.swap()
        try:
            results = self.validator.run(self.model, self.device)
            self.last_validated = self.iteration
            if self.dist.rank != 0:
                return {}
            metrics, score = validation_metrics(results), selection_score(results)
            if self.best_score is None or score > self.best_score:
                self.best_score, self.best_iteration = score, self.iteration
                if self.run_dir is not None:
                    save_checkpoint(best_model_path(self.run_dir), self.core,
                                    {"iteration": self.iteration, "score": score, "results": results,
                                     "params": dataclasses.asdict(self.params)})
                for hook in self.best_hooks:
                    hook(self)
        finally:
            if self.average is not None:
                self.average.swap()
        metrics["validation/best_score"] = self.best_score
        if self.logger:
            self.logger.log_metrics(metrics, self.iteration)
        return metrics

    # ---------------------------------------------------------------------------------- state and saving

    def save_state(self, directory: str | Path) -> None:
        """Write the resumable state (shared part on rank 0, this worker's part on every rank)."""
        shared = None
        if self.dist.rank == 0:
            shared = {"model": self.core.state_dict(), "optimizer": self.optimizer.state_dict(),
                      "scheduler": self.scheduler.state_dict(), "iteration": self.iteration,
                      "position": self.schedule.position(self.iteration).to_dict(), "best_score": self.best_score,
                      "best_iteration": self.best_iteration, "world_size": self.dist.world,
                      "vocab_fingerprint": self.vocab.fingerprint, "vectors": vector_sources(self.core),
                      "tasks": self.tasks, "average": self.average.state_dict() if self.average else None}
        save_training_state(directory, self.dist.rank, {"data": self.data.state_dict(), "rng": rng_state()}, shared)

    def load_state(self, directory: str | Path) -> None:
        """Continue from a directory written by `save_state` (same vocabulary and vectors; any worker count)."""
        state, mine = load_training_state(directory, self.dist.rank, self.device)
        if state["vocab_fingerprint"] != self.vocab.fingerprint:
            raise RuntimeError("the checkpoint was trained with another vocabulary "
                               f"({state['vocab_fingerprint'][:12]} != {self.vocab.fingerprint[:12]})")
        check_vectors(directory, state["vectors"], vector_sources(self.core))
        self.core.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        if self.average is not None:
            self.average.load_state_dict(state["average"])
        self.iteration, self.best_score = state["iteration"], state["best_score"]
        self.best_iteration = state["best_iteration"]
        if state["position"] != self.schedule.position(self.iteration).to_dict():
            log.warning("the schedule changed since the checkpoint: continuing at %s",
                        self.schedule.position(self.iteration))
        self.data.load_state_dict(mine["data"])
        if mine["rng"] is not None:
            set_rng_state(mine["rng"])
        else:  # a worker the checkpoint's group did not have: its own dropout stream, from this iteration
            self._seed_rngs(self.iteration)

    def checkpoint(self, publish: Publish, metrics: dict[str, Any]) -> None:
        """`save_state` into a temporary directory and hand it to `publish` (which copies it away)."""
        with tempfile.TemporaryDirectory(prefix="deca-ckpt-") as tmp:
            self.save_state(tmp)
            publish(metrics, Path(tmp), self.iteration)
        self.last_saved = self.iteration

    # ------------------------------------------------------------------------------------------ the loop

    def train(self, publish: Publish | None = None) -> None:
        """Train until `train.iterations` (or `train.max_minutes`), validating, logging and checkpointing."""
        tc = self.params.train
        if self.logger:
            log.info("training %s from iteration %d on %d worker(s); schedule %s", self.tasks, self.iteration,
                     self.dist.world, self.schedule.describe())
        deadline = time.monotonic() + 60 * tc.max_minutes if tc.max_minutes else None
        window, step = Window(), None
        self.model.train()
        while self.iteration < tc.iterations:
            step = self.train_step()
            window.add(step)
            for hook in self.hooks:
                hook(self)
            out_of_time = False
            if self.iteration % tc.log_every == 0 or self.iteration == tc.iterations:
                out_of_time = self._log(window, step, deadline is not None and time.monotonic() > deadline)
                window = Window()
            else:
                self.progress.push(iteration=self.iteration, total=tc.iterations, loss=lambda: float(step.loss),
                                   phase=self.schedule.position(self.iteration - 1).phase_name)
            if tc.val_every > 0 and self.iteration % tc.val_every == 0:
                self.validate()
            if publish and tc.save_every > 0 and self.iteration % tc.save_every == 0:
                self.checkpoint(publish, self._summary(step))
            if out_of_time:
                if self.logger:
                    self.logger.set_tag("stopped_by_time_at", self.iteration)
                break
        if self.last_validated != self.iteration:
            self.validate()
        if publish and self.last_saved != self.iteration:
            self.checkpoint(publish, self._summary(step))

    def _log(self, window: Window, step: Step, out_of_time: bool) -> bool:
        metrics, stop = window.reduce(self.dist, out_of_time)  # any worker out of time: all stop here
        if self.logger:
            metrics["train/lr"] = step.lr
            self.logger.log_metrics(metrics, self.iteration)
            self.progress.push(force=True, iteration=self.iteration, total=self.params.train.iterations,
                               phase=self.schedule.position(self.iteration - 1).phase_name,
                               loss=metrics["train/loss"], tokens_per_s=metrics["train/tokens_per_s"])
        return stop

    def _summary(self, step: Step | None) -> dict[str, Any]:
        return {"iteration": self.iteration, "loss": float(step.loss) if step else float("nan"),
                "best_score": self.best_score}

    def cleanup(self) -> None:
        """Tell the driver's progress bar that this worker is done."""
        self.progress.push(force=True, iteration=self.iteration, total=self.params.train.iterations, event="done")


def local_recipe(params: Params, tasks: Sequence[str] | None = None, logger: MetricLogger | None = None,
                 checkpoint_dir: str | Path | None = None, **kwargs: Any) -> TrainingRecipe:
    """A set-up recipe in this process, without Ray (benchmarks, experiments, tests), continued from
    `checkpoint_dir` when given (a `save_state` directory); declares the params' custom tasks, as `deca train`
    does."""

    declare(params)
    recipe = TrainingRecipe(params, tasks or resolve_tasks(params.train.tasks), logger=logger or MemoryLogger(),
                            **kwargs)
    return recipe.setup(checkpoint_dir)
