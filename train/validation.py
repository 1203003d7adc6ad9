"""Validation during training: greedy decoding of each task's validation split, shared out across the
workers, scored on rank 0 with eval.api (the same scoring and metric names as `deca evaluate`)."""
from __future__ import annotations

from typing import Any

import torch

from deca.config import Params
from train.data import read_share
from train.distributed import Distributed, unwrap
from mqan.decode import iter_answers


class Validator:
    """Decodes every task's validation split (the first `train.max_val_examples` rows) on all workers. With
    `keep_examples` set, rank 0 also keeps the last round's per-example statistics of each task's headline
    (eval.examples: ``{"kind", "values"}``) in `examples`, outside the results (which go into checkpoints)."""

    def __init__(self, processed_dir: str, tasks: list[str], vocab, params: Params, dist: Distributed,
                 precision: str = "fp32"):
        self.vocab, self.params, self.dist = vocab, params, dist
        self.precision = precision  # as the recipe resolved train.precision (mqan/precision.py)
        limit = params.train.max_val_examples
        self.rows = {t: read_share(processed_dir, t, "validation", limit=limit).to_pylist() for t in tasks}
        self.keep_examples, self.examples = False, {}

    @torch.no_grad()
    def decode(self, model: torch.nn.Module, device: torch.device) -> dict[str, dict[str, str]]:
        """{task: {id: prediction}} for this worker's batches (every `world`-th, from `rank`; mqan.decode)."""
        core = unwrap(model)
        was_training = core.training
        core.eval()
        mine: dict[str, dict[str, str]] = {}
        try:
            with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
                for task, rows in self.rows.items():
                    mine[task] = {str(rows[i]["id"]): answer.text
                                  for idx, answers in iter_answers(core, self.vocab, rows, self.params.train.val_batch_size,
                                                                   self.params.model.max_answer_length, device,
                                                                   part=(self.dist.rank, self.dist.world),
                                                                   precision=self.precision,
                                                                   cuda_graphs=self.params.train.cuda_graphs)
                                  for i, answer in zip(idx, answers)}
        finally:
            core.train(was_training)
        return mine

    def run(self, model: torch.nn.Module, device: torch.device) -> dict[str, dict] | None:
        """Per-task results of eval.api.score_task on rank 0 (None on other ranks)."""
        from eval.api import score_task

        gathered = self.dist.gather(self.decode(model, device))
        if self.dist.rank != 0:
            return None
        results = {}
        for task, rows in self.rows.items():
            preds = {k: v for part in gathered for k, v in part[task].items()}
            results[task] = score_task(task, preds, rows, examples=self.keep_examples)
            if self.keep_examples:
                self.examples[task] = results[task].pop("examples")
        return results


def selection_score(results: dict[str, dict[str, Any]]) -> float:
    """What picks the best model: the sum of the headline metrics of the trained tasks."""
    return sum(float(r["headline"]["value"]) for r in results.values())


def validation_metrics(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The metrics of a validation round (eval.api.metric_values names) and ``validation/score``."""
    from eval.api import metric_values

    return {**metric_values("validation", results), "validation/score": selection_score(results)}
