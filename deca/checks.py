"""Value rules of params.yaml, checked when the file is loaded, before any stage starts.

`deca.config` checks keys and types; this module checks ranges and choices, and says where a bad
value came from (``params.yaml:73`` or ``--set``), so that `model.dropout: 1.5` fails in a second with
the key, the value, what is allowed and where to change it, not inside a Ray worker after 25 seconds.
Rules that need code from another layer (a strategy's phases, the training splits) are checked by that
layer before it starts (train/schedule.py, train/driver.py).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Mapping

import yaml

from deca.errors import ConfigError, did_you_mean

Rule = Callable[[Any], str | None]  # value -> what is wrong, or None


def at_least(low: float, optional: bool = False) -> Rule:
    def rule(v):
        if v is None:
            return None if optional else f"must be set (>= {low})"
        return None if v >= low else f"must be >= {low}"
    return rule


def above(low: float, optional: bool = False) -> Rule:
    def rule(v):
        if v is None:
            return None if optional else f"must be set (> {low})"
        return None if v > low else f"must be > {low}"
    return rule


def fraction(v) -> str | None:
    return None if 0 <= v < 1 else "must be in [0, 1)"


def one_of(*choices: str) -> Rule:
    def rule(v):
        return None if v in choices else f"must be one of {', '.join(choices)}" + did_you_mean(v, choices)
    return rule


def even(v) -> str | None:
    return None if v >= 2 and v % 2 == 0 else "must be an even number >= 2 (each BiLSTM direction gets half)"


def betas(v) -> str | None:
    return None if len(v) == 2 and all(0 <= b < 1 for b in v) else "must be two numbers in [0, 1)"


def positive_values(v) -> str | None:
    return None if all(n >= 1 for n in v.values()) else "every value must be >= 1"


RULES: dict[str, Rule] = {
    "prepare.num_shards": at_least(0), "prepare.rows_per_shard": at_least(1), "prepare.batch_size": at_least(1),
    "prepare.vocab_size": at_least(1),
    "prepare.train_filter.max_context_tokens": at_least(1, optional=True),
    "prepare.train_filter.max_answer_tokens": at_least(1, optional=True),
    "model.variant": one_of("s2s", "satt", "catt", "qptr", "mqan"), "model.dimension": even,
    "model.ff_hidden": at_least(1), "model.heads": at_least(1), "model.head_dim": at_least(1, optional=True),
    "model.transformer_layers": at_least(0), "model.rnn_layers": at_least(1), "model.dropout": fraction,
    "model.max_generative_vocab": at_least(5), "model.char_ngram_dim": at_least(0),
    "model.char_ngram_buckets": at_least(1), "model.embedding_dim": at_least(0),
    "model.embedding_init_std": above(0), "model.word_dropout": fraction, "model.max_answer_length": at_least(1),
    "train.phase_iterations": at_least(0), "train.batches_per_task": positive_values,
    "train.iterations": at_least(1), "train.max_minutes": above(0, optional=True),
    "train.token_budget": at_least(1), "train.pool_batches": at_least(1), "train.num_workers": at_least(1),
    "train.cpus_per_worker": above(0), "train.gpus_per_worker": above(0), "train.lr": above(0),
    "train.placement_strategy": one_of("PACK", "SPREAD", "STRICT_SPREAD", "STRICT_PACK"),
    "train.warmup": at_least(0), "train.betas": betas, "train.eps": above(0), "train.grad_clip": at_least(0),
    "train.weight_decay": at_least(0), "train.ema_decay": fraction, "train.val_every": at_least(0),
    "train.save_every": at_least(0), "train.log_every": at_least(1), "train.val_batch_size": at_least(1),
    "train.max_val_examples": at_least(1, optional=True), "train.checkpoints_to_keep": at_least(1),
    "train.max_failures": at_least(0),
    "evaluate.split": one_of("validation", "test"), "evaluate.batch_size": at_least(1),
    "evaluate.max_examples": at_least(1, optional=True), "evaluate.max_answer_length": at_least(1, optional=True),
}


def key_lines(text: str) -> dict[str, int]:
    """Dotted key -> line (from 1) of each mapping key in a YAML document (empty if it does not parse)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError:
        return {}
    lines: dict[str, int] = {}

    def walk(node, prefix: str) -> None:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                dotted = f"{prefix}{key.value}"
                lines[dotted] = key.start_mark.line + 1
                walk(value, dotted + ".")

    walk(root, "")
    return lines


def leaves(obj: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    """(dotted key, value) of every field of nested dataclasses."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from leaves(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", value


def check_values(params: Any, origin: Mapping[str, str]) -> None:
    """Raise one ConfigError listing every value that breaks a rule: where, key, value, what is allowed."""
    problems = []
    for key, value in leaves(params):
        rule = RULES.get(key)
        wrong = rule(value) if rule else None
        if wrong:
            where = origin.get(key, "params")  # a default, or params built in code
            problems.append(f"{where}: {key} = {value!r}: {wrong}")
    m = getattr(params, "model", None)
    if m is not None and not (m.word_vectors or m.char_vectors or m.char_ngram_dim or m.embedding_dim):
        problems.append("model: no input features: set model.word_vectors, model.char_vectors, "
                        "model.char_ngram_dim or model.embedding_dim")
    if problems:
        raise ConfigError("bad parameter value(s):\n  " + "\n  ".join(problems))
