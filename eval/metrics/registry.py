"""The metric registry: every metric by name, whether higher is better, and the family computing it.

Metrics that come out of one computation (ROUGE-1/2/L, the four WOZ numbers...) belong to one
*family*: a function ``(predictions, rows, options) -> {metric name: value}`` over rows of the
processed schema (`answers`, `answer`, and `gold` already parsed from JSON). A task names its headline
metric (`deca.registry.Task.metric`); scoring a task runs the family of that metric plus the ``squad``
family (em, nem, nf1), which decaNLP reports for every task. The decaScore is declared here too
(`DECASCORE`): the sum of the headline metrics of the ten decaNLP tasks.

No family is declared here: the decaNLP families register themselves in `eval.metrics.families`,
which the package imports (eval/metrics/__init__.py), so the registry is full however it is imported.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from deca.errors import UnknownName
from deca.registry import DECANLP


@dataclass(frozen=True)
class Metric:
    name: str
    higher_is_better: bool
    description: str
    family: str = ""


@dataclass(frozen=True)
class ScoreOptions:
    """Knobs of the families that need them."""

    processes: int | None = None  # ROUGE worker processes (None: automatic)
    wikisql_db: str | None = None  # SQLite database of the scored WikiSQL split (execution accuracy)
    progress: bool = False  # tqdm bars on long families


FamilyFn = Callable[[Sequence[str], Sequence[Mapping], ScoreOptions], dict[str, float]]


@dataclass(frozen=True)
class Family:
    name: str
    metrics: tuple[str, ...]
    compute: FamilyFn


@dataclass(frozen=True)
class Aggregate:
    """A score summed over tasks' headline metrics (the decaScore)."""

    name: str
    tasks: tuple[str, ...]
    description: str

    @property
    def maximum(self) -> float:
        return 100.0 * len(self.tasks)


METRICS: dict[str, Metric] = {}
FAMILIES: dict[str, Family] = {}
DECASCORE = Aggregate("decascore", tuple(DECANLP), "sum of the ten decaNLP tasks' headline metrics (0..1000)")
BASE_FAMILY = "squad"  # computed for every task, as decaNLP does


def register_family(name: str, metrics: Sequence[Metric]) -> Callable[[FamilyFn], FamilyFn]:
    """Register a family function and the metrics it returns (decorator)."""

    def wrap(fn: FamilyFn) -> FamilyFn:
        if name in FAMILIES:
            raise ValueError(f"metric family {name!r} registered twice")
        for m in metrics:
            if m.name in METRICS:
                raise ValueError(f"metric {m.name!r} registered twice")
            METRICS[m.name] = Metric(m.name, m.higher_is_better, m.description, family=name)
        FAMILIES[name] = Family(name, tuple(m.name for m in metrics), fn)
        return fn

    return wrap


def get_metric(name: str) -> Metric:
    """The registered metric `name`; an UnknownName (a KeyError) suggests the closest names."""
    if name not in METRICS:
        raise UnknownName("metric", name, METRICS, f"known: {', '.join(sorted(METRICS))}")
    return METRICS[name]


def suite(headline: str) -> tuple[str, ...]:
    """Families to run for a task whose headline metric is `headline` (the base family first)."""
    family = get_metric(headline).family
    return (BASE_FAMILY,) if family == BASE_FAMILY else (BASE_FAMILY, family)


def compute(headline: str, predictions: Sequence[str], rows: Sequence[Mapping],
            options: ScoreOptions | None = None) -> dict[str, float]:
    """Every metric of the task's suite, the headline first, then in registration order."""
    options = options or ScoreOptions()
    values: dict[str, float] = {}
    for family in reversed(suite(headline)):
        values.update(FAMILIES[family].compute(predictions, rows, options))
    ordered = {headline: values[headline]}
    ordered.update((k, v) for k, v in values.items() if k != headline)
    return ordered
