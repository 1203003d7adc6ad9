"""The checks of params, one function for every command: `check_params`.

`deca.config` checks keys and types; this module checks the values, and says where a bad value came
from (``params.yaml:73``, an overlay's ``file:line`` or ``--set``), so that `model.dropout: 1.5` fails in
a second with the key, the value, what is allowed and where to change it, not inside a Ray worker after
25 seconds. Loading params runs the value rules and the custom tasks' checks (every command); each
command then runs the checks of what it reads before it starts (task names and patterns, prepare's task
options, ...), and `deca validate` (the pipeline's first stage) runs all of them, so that what a stage
would refuse is refused before any stage starts. Checks that need another layer's code (a strategy's
schedule, the metric registry, the vector sources) take that code as an argument, and a key whose allowed
values a layer above keeps (the model's variants, the precisions, ...) takes that list as an argument
(`choices`): deca imports no layer above it, and no list is written twice.

Params come one way, `checked_params` (a params file, overrides and where each value came from; read, then checked
once), with two fronts: `load_params` (the params alone) and `params_from_args` (a command's --params and --set).
Under it, deca.config.read_params checks keys and types only: the training command calls it directly because its
checks (train.driver.check_training) also build the schedule it then trains on. A run's recorded params (run.json,
a Ray worker's config) were checked when the run started and come back through deca.config.from_dict.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from deca.config import DEFAULT_PARAMS, Params, ParamsError, Problem, read_params, where_from
from deca.params_file import key_lines
from deca.params_args import parse_overrides
from deca.custom_tasks import declare, make_tasks
from deca.errors import ConfigError, DecaError, did_you_mean
from deca.registry import SPLITS, all_tasks, get_task, resolve_tasks

__all__ = ["ParamsError", "Problem", "key_lines", "where_from"]  # (defined in deca.config, read from here too)

Rule = Callable[[Any], str | None]  # value -> what is wrong, or None
EVALUATED_SPLITS = tuple(s for s in SPLITS if s != "train")  # evaluate.split: a split with gold answers held out


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


def workers(v) -> str | None:
    """train.num_workers: N >= 0 (0: Ray Train's local mode), or [min, max] with 1 <= min <= max (elastic)."""
    if isinstance(v, list):
        if len(v) == 2 and all(isinstance(n, int) and not isinstance(n, bool) for n in v) and 1 <= v[0] <= v[1]:
            return None
        return "must be [min, max] with 1 <= min <= max (elastic training), or one number N >= 0"
    return None if v >= 0 else "must be >= 0"


def positive_values(v) -> str | None:
    return None if all(n >= 1 for n in v.values()) else "every value must be >= 1"


RULES: dict[str, Rule] = {
    "prepare.num_shards": at_least(0), "prepare.rows_per_shard": at_least(1), "prepare.batch_size": at_least(1),
    "prepare.vocab_size": at_least(1),
    "prepare.train_filter.max_context_tokens": at_least(1, optional=True),
    "prepare.train_filter.max_answer_tokens": at_least(1, optional=True),
    "model.dimension": even,
    "model.ff_hidden": at_least(1), "model.heads": at_least(1), "model.head_dim": at_least(1, optional=True),
    "model.transformer_layers": at_least(0), "model.rnn_layers": at_least(1), "model.dropout": fraction,
    "model.max_generative_vocab": at_least(5), "model.char_ngram_dim": at_least(0),
    "model.char_ngram_buckets": at_least(1), "model.embedding_dim": at_least(0),
    "model.embedding_init_std": above(0), "model.word_dropout": fraction, "model.max_answer_length": at_least(1),
    "train.phase_iterations": at_least(0), "train.batches_per_task": positive_values,
    "train.iterations": at_least(1), "train.max_minutes": above(0, optional=True),
    "train.token_budget": at_least(1), "train.pool_batches": at_least(1),
    "train.num_workers": workers,  # 0: Ray Train's local mode (local_mode_problems); [min, max]: elastic
    "train.resize_every_s": above(0),
    "train.cpus_per_worker": above(0), "train.gpus_per_worker": above(0), "train.lr": above(0),
    "train.warmup": at_least(0), "train.betas": betas, "train.eps": above(0), "train.grad_clip": at_least(0),
    "train.weight_decay": at_least(0), "train.ema_decay": fraction, "train.val_every": at_least(0),
    "train.save_every": at_least(0), "train.log_every": at_least(1), "train.val_batch_size": at_least(1),
    "train.max_val_examples": at_least(1, optional=True), "train.checkpoints_to_keep": at_least(1),
    "train.max_failures": at_least(0),
    "evaluate.split": one_of(*EVALUATED_SPLITS), "evaluate.batch_size": at_least(1),
    "evaluate.max_examples": at_least(1, optional=True), "evaluate.max_answer_length": at_least(1, optional=True),
}
# Keys whose allowed values are a list kept by the code that acts on them, in a layer above deca (the model's
# variants in mqan/model.py, the precisions in mqan/precision.py, train.bucketing in train/data.py, ...): the
# caller passes them as `choices` (a layer, see check_params), e.g. train.choices.allowed_values().



def leaves(obj: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    """(dotted key, value) of every field of nested dataclasses."""
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            yield from leaves(value, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", value


COMMANDS = ("prepare", "train", "evaluate", "register")
# The task selectors each command resolves before it starts.
TASK_LISTS = {"prepare": ("data.tasks", "prepare.vocab_tasks"), "train": ("train.tasks",),
              "evaluate": ("evaluate.tasks",)}
REGISTER_KEYS = ("register.accept", "register.replicates", "register.margins")
SCHEDULE_KEYS = ("train.strategy", "train.tasks", "train.phases", "train.phase_iterations", "train.iterations",
                 "train.batches_per_task")


def value_of(params: Any, key: str) -> Any:
    """The value of dotted `key` in `params` (dataclasses and mappings)."""
    node = params
    for part in key.split("."):
        node = node.get(part) if isinstance(node, Mapping) else getattr(node, part)
    return node


def value_problems(params: Any, choices: Mapping[str, Sequence[str]] | None = None) -> list[Problem]:
    """Every value that breaks a rule of RULES or is not among its key's `choices` (key -> the allowed
    values, given by the layer that acts on them), and a model without input features."""
    rules = {**RULES, **{key: one_of(*allowed) for key, allowed in (choices or {}).items()}}
    problems = []
    for key, value in leaves(params):
        rule = rules.get(key)
        wrong = rule(value) if rule else None
        if wrong:
            problems.append(Problem(key, f"{key} = {value!r}: {wrong}"))
    problems += local_mode_problems(params)
    m = getattr(params, "model", None)
    if m is not None and not (m.word_vectors or m.char_vectors or m.char_ngram_dim or m.embedding_dim):
        problems.append(Problem("model", "model: no input features: set model.word_vectors, model.char_vectors, "
                                         "model.char_ngram_dim or model.embedding_dim"))
    return problems


def local_mode_problems(params: Any) -> list[Problem]:
    """What Ray Train's local mode (train.num_workers = 0: the training function in the driver's process) cannot
    do, asked for together with it: restarts after a failure (train.max_failures) and a placement of workers
    (train.placement_strategy other than the default PACK). Refused rather than ignored."""
    tc = getattr(params, "train", None)
    if tc is None or tc.num_workers != 0:
        return []
    local = "train.num_workers = 0 (Ray Train's local mode: training in this process)"
    problems = []
    if tc.max_failures:
        problems.append(Problem("train.max_failures", f"train.max_failures = {tc.max_failures}: {local} cannot "
                                "restart after a failure; set train.max_failures: 0 (a stopped run continues with "
                                "`deca train --resume`) or train.num_workers >= 1", ("train.num_workers",)))
    if tc.placement_strategy != "PACK":
        problems.append(Problem("train.placement_strategy", f"train.placement_strategy = {tc.placement_strategy!r}: "
                                f"{local} places no workers; set it to PACK or train.num_workers >= 1",
                                ("train.num_workers",)))
    return problems


def check_values(params: Any, origin: Mapping[str, str],
                 choices: Mapping[str, Sequence[str]] | None = None) -> None:
    """Raise one ConfigError listing every value that breaks a rule: where, key, value, what is allowed."""
    problems = value_problems(params, choices)
    if problems:
        raise ParamsError(problems, origin)


def custom_task_problems(params: Any) -> list[Problem]:
    """The custom tasks of params (deca/custom_tasks.py), checked without being declared."""
    try:
        make_tasks(params)
    except ConfigError as exc:
        key = str(exc).partition(":")[0]
        return [Problem(key if key.startswith("custom_tasks") else "custom_tasks", str(exc))]
    return []


def task_problems(params: Any, commands: Iterable[str]) -> list[Problem]:
    """Task selectors that name no task (the commands' TASK_LISTS), and prepare's task options: each key a
    task's, each value options of that task. Custom tasks resolve once declared (deca.custom_tasks.declare)."""
    problems = []
    for key in [k for c in commands for k in TASK_LISTS.get(c, ())]:
        value = value_of(params, key)
        if value is None:
            continue
        try:
            resolve_tasks(value)
        except DecaError as exc:
            problems.append(Problem(key, f"{key} = {value!r}: {exc}"))
    if "prepare" in commands:
        by_key = {t.key: t for t in all_tasks().values()}
        for name, values in params.prepare.task_options.items():
            key = f"prepare.task_options.{name}"
            if name not in by_key:
                problems.append(Problem(key, f"{key}: no task has the key {name!r}{did_you_mean(name, by_key)}"))
                continue
            try:
                by_key[name].make_options(values)
            except ConfigError as exc:
                problems.append(Problem(key, str(exc)))
    return problems


def layer_problems(params: Any, commands: Iterable[str], *, schedule: Callable | None = None,
                   metrics: Callable | None = None, vectors: Callable | None = None,
                   gate: Callable | None = None) -> list[Problem]:
    """The checks that run another layer's code, given as arguments: `schedule(train_config, tasks)` (the
    strategy and its phases against the budget, train.schedule.from_config), `metrics(tasks)` (each task's
    headline metric is registered, eval.api.check_metrics), `vectors(source)` (a vector source is there),
    `gate(register_config)` (the promotion gate's rule, resamples and margins, eval.gate.check_config).
    Each raises a DecaError; a task list that does not resolve is left to task_problems."""
    problems = []
    if "register" in commands and gate:
        problems += _raised(gate, (params.register,), "register", REGISTER_KEYS)
    for command, key in (("train", "train.tasks"), ("evaluate", "evaluate.tasks")):
        if command not in commands:
            continue
        try:
            tasks = resolve_tasks(value_of(params, key))
        except DecaError:
            continue
        if command == "train" and schedule:
            problems += _raised(schedule, (params.train, tasks), "train.strategy", SCHEDULE_KEYS)
        for task in tasks if metrics else ():
            owner = f"custom_tasks.{task}.metric" if get_task(task).group == "custom" else key
            problems += _raised(metrics, ([task],), owner)
    for key in ("model.word_vectors", "model.char_vectors") if vectors and "train" in commands else ():
        source = value_of(params, key)
        if source:
            problems += [Problem(p.key, f"{key} = {source!r}: {p.text}") for p in _raised(vectors, (source,), key)]
    return problems


def _raised(check: Callable, args: tuple, key: str, keys: Sequence[str] = ()) -> list[Problem]:
    """[] when check(*args) passes; else its DecaError as a Problem of the first of `keys` it names (`key`
    when none), involving the keys it names."""
    try:
        check(*args)
    except DecaError as exc:
        text = str(exc)
        named = [k for k in keys if re.search(rf"\b{re.escape(k)}\b", text)]
        return [Problem(named[0] if named else key, text, tuple(named))]
    return []


def check_params(params: Any, origin: Mapping[str, str] | None = None, commands: Iterable[str] = COMMANDS,
                 choices: Mapping[str, Sequence[str]] | None = None, **layers: Callable) -> None:
    """The one check of params: every problem a command would refuse before it starts, at once.

    Always: the value rules (RULES, and the allowed values of `choices`: key -> the list kept by the layer
    that acts on it) and the custom tasks; then for each of `commands` (prepare, train, evaluate, register) its task
    selectors and options, and the checks of other layers passed as `layers` (see layer_problems). `deca
    validate` passes every command and layer; each command its own, before it starts. Raises a ParamsError
    (a ConfigError) naming where each bad value came from: `origin` (dotted key -> ``params.yaml:12``,
    ``--set ...``: read_params' second value; none: "params"). Task names resolve against the declared
    custom tasks (the caller declares them, e.g. with checked_params(..., declared=True)).
    """
    commands = list(commands)
    problems = value_problems(params, choices)
    custom = custom_task_problems(params)
    problems += custom
    if not custom and commands:
        problems += task_problems(params, commands)
        bad = {k for p in problems for k in p.involved()}
        problems += [p for p in layer_problems(params, commands, **layers) if not p.involved() & bad]
    if problems:
        raise ParamsError(problems, origin or {})


def declare_quietly(params: Params) -> None:
    """Declare the custom tasks of `params` so that task names resolve against them; a bad custom task is left
    for check_params to name, with where it came from."""
    try:
        declare(params)
    except ConfigError:
        pass


def checked_params(path: str | Path = DEFAULT_PARAMS, overrides: Mapping[str, Any] | None = None,
                   origin: Mapping[str, str] | None = None, commands: Iterable[str] = (), declared: bool = False,
                   **layers: Any) -> tuple[Params, dict[str, str]]:
    """Read params (deca.config.read_params: keys and types) and check them once (check_params with
    `commands` and `layers`; none: the values and the custom tasks); with `declared`, their custom tasks are
    declared first (deca.custom_tasks.declare). Returns (params, where each value came from)."""
    params, where = read_params(path, overrides, origin)
    if declared:
        declare_quietly(params)
    check_params(params, where, commands, **layers)
    return params, where


def load_params(path: str | Path = DEFAULT_PARAMS, overrides: Mapping[str, Any] | None = None) -> Params:
    """params.yaml (missing file: all defaults) with dotted `overrides` like {"train.iterations": 5}: keys,
    types, values and custom tasks checked (checked_params), an error naming the file and line of the value
    (or ``--set``). Nothing is registered: see params_from_args."""
    return checked_params(path, overrides)[0]


def params_from_args(args, commands: Iterable[str] = (), **layers: Any) -> Params:
    """The params of a command: its --params file with its --set overrides, with their custom tasks declared
    (so that the command resolves their names), checked once (checked_params) for `commands`."""
    return checked_params(args.params, parse_overrides(args.overrides), commands=commands, declared=True,
                          **layers)[0]
