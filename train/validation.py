"""Validation during training: greedy decoding of each task's validation split, shared out across the
workers, scored on rank 0 with eval.api (the same scoring and metric names as `deca evaluate`)."""
from __future__ import annotations

from typing import Any

import torch

from deca.config import Params
from train.batch import collate
from train.data import read_share, validation_batches
from train.distributed import Distributed, unwrap


class Validator:
    """Decodes every task's validation split (the first `train.max_val_examples` rows) on all workers."""

    def __init__(self, processed_dir: str, tasks: list[str], vocab, params: Params, dist: Distributed):
        self.vocab, self.params, self.dist = vocab, params, dist
        limit = params.train.max_val_examples
        self.tables = {t: read_share(processed_dir, t, "validation", limit=limit) for t in tasks}
        self.gold = {t: tab.to_pylist() for t, tab in self.tables.items()} if dist.rank == 0 else {}

    @torch.no_grad()
    def decode(self, model: torch.nn.Module, device: torch.device) -> dict[str, dict[str, str]]:
        """{task: {id: prediction}} for this worker's batches (every `world`-th, from `rank`)."""
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
        return mine

    def run(self, model: torch.nn.Module, device: torch.device) -> dict[str, dict] | None:
        """Per-task results of eval.api.score_task on rank 0 (None on other ranks)."""
        from eval.api import score_task

        gathered = self.dist.gather(self.decode(model, device))
        if self.dist.rank != 0:
            return None
        results = {}
        for task in self.tables:
            preds = {k: v for part in gathered for k, v in part[task].items()}
            results[task] = score_task(task, preds, self.gold[task])
        return results


def selection_score(results: dict[str, dict[str, Any]]) -> float:
    """What picks the best model: the sum of the headline metrics of the trained tasks."""
    return sum(float(r["headline"]["value"]) for r in results.values())


def validation_metrics(results: dict[str, dict[str, Any]]) -> dict[str, float]:
    """The metrics of a validation round (eval.api.metric_values names) and ``validation/score``."""
    from eval.api import metric_values

    return {**metric_values("validation", results), "validation/score": selection_score(results)}
