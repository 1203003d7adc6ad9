"""Which task each training iteration draws its batch from: phases, then round-robin.

A schedule is a list of finite phases (each a round-robin over a subset of the tasks for a number of
iterations) followed by an endless round-robin over every training task. Within a phase, one *round*
takes ``batches_per_task[t]`` consecutive batches (default 1) from each task, in the phase's task order.
Nothing is reset between phases: the global iteration keeps counting (as in the original
"jump start"), but phases here are measured in iterations, not rounds.

The schedule is a pure function of the iteration, so a resumed run continues mid-curriculum exactly
where it stopped (the original restarted its jump-start phase on resume). `Position` is the
serializable (phase, round, task) at an iteration; checkpoints store it to detect a changed schedule.

Presets (paper Table 3 / Appendix F); the first phase lasts ``phase_iterations``:
  fully_joint                          round-robin over all tasks from the start
  single_task                          exactly one task
  curriculum                           SST, QA-SRL, QA-ZRE, WOZ, WikiSQL, MWSC first
  anti_curriculum_squad                SQuAD alone first (the paper's best)
  anti_curriculum_squad_iwslt_cnn      SQuAD, IWSLT, CNN/DM first
  anti_curriculum_squad_iwslt_cnn_mnli SQuAD, IWSLT, CNN/DM, MNLI first
  custom                               the phases given in params.train.phases (a phase without
                                       `iterations` lasts phase_iterations)
Phase tasks that are not among the training tasks are left out (a phase left empty is skipped).
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from deca.errors import ConfigError

log = logging.getLogger(__name__)

PRESET_FIRST_PHASE: dict[str, tuple[str, ...]] = {
    "curriculum": ("sst", "srl", "zre", "woz.en", "wikisql", "schema"),
    "anti_curriculum_squad": ("squad",),
    "anti_curriculum_squad_iwslt_cnn": ("squad", "iwslt.en.de", "cnn_dailymail"),
    "anti_curriculum_squad_iwslt_cnn_mnli": ("squad", "iwslt.en.de", "cnn_dailymail", "multinli.in.out"),
}
STRATEGIES = ("fully_joint", "single_task", *PRESET_FIRST_PHASE, "custom")


@dataclass(frozen=True)
class Phase:
    """Round-robin over `tasks` for `iterations` iterations (None: forever, the final phase)."""

    name: str
    tasks: tuple[str, ...]
    iterations: int | None
    batches_per_task: Mapping[str, int] = field(default_factory=dict)

    def slots(self) -> list[str]:
        """One round: each task repeated by its batch count, in task order."""
        return [t for t in self.tasks for _ in range(self.batches_per_task.get(t, 1))]


@dataclass(frozen=True)
class Position:
    """Where an iteration falls: phase index and name, round within the phase, slot within the round."""

    iteration: int
    phase: int
    phase_name: str
    round: int
    slot: int
    task: str

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


class Schedule:
    """Finite phases followed by a final endless round-robin; `position(i)` says what iteration i trains."""

    def __init__(self, phases: Sequence[Phase]):
        if not phases or phases[-1].iterations is not None:
            raise ValueError("the last phase must be endless (iterations=None)")
        for ph in phases:
            if not ph.tasks:
                raise ValueError(f"phase {ph.name!r} has no tasks")
            if ph is not phases[-1] and (ph.iterations is None or ph.iterations <= 0):
                raise ValueError(f"phase {ph.name!r} needs a positive number of iterations")
            if any(k <= 0 for k in ph.batches_per_task.values()):
                raise ValueError(f"phase {ph.name!r}: batches per task must be positive")
        self.phases = list(phases)
        self._slots = [ph.slots() for ph in self.phases]
        self._starts = [0]
        for ph in self.phases[:-1]:
            self._starts.append(self._starts[-1] + ph.iterations)

    @property
    def tasks(self) -> list[str]:
        """Every task trained at some point, in first-appearance order."""
        out: list[str] = []
        for ph in self.phases:
            out.extend(t for t in ph.tasks if t not in out)
        return out

    def phase_starts(self) -> list[int]:
        """The iteration at which each phase begins."""
        return list(self._starts)

    def position(self, iteration: int) -> Position:
        """The (phase, round, slot, task) of 0-based `iteration` (the number of steps already taken)."""
        if iteration < 0:
            raise ValueError(f"iteration must be >= 0, got {iteration}")
        index = max(i for i, start in enumerate(self._starts) if start <= iteration)
        offset = iteration - self._starts[index]
        slots = self._slots[index]
        rnd, slot = divmod(offset, len(slots))
        return Position(iteration, index, self.phases[index].name, rnd, slot, slots[slot])

    def describe(self) -> str:
        parts = []
        for ph, start in zip(self.phases, self._starts):
            span = f"{start}-{start + ph.iterations - 1}" if ph.iterations is not None else f"{start}-"
            parts.append(f"{ph.name} [{span}]: {', '.join(ph.tasks)}")
        return "; ".join(parts)


def build_schedule(strategy: str, tasks: Sequence[str], *, phase_iterations: int = 75000,
                   phases: Sequence[Mapping[str, Any]] = (), batches_per_task: Mapping[str, int] | None = None
                   ) -> Schedule:
    """The schedule of a strategy (see the module docstring) over the training `tasks`, in their order."""
    tasks = list(tasks)
    if not tasks:
        raise ConfigError("train.tasks: no training task")
    bpt = dict(batches_per_task or {})
    unknown = sorted(set(bpt) - set(tasks))
    if unknown:
        raise ConfigError(f"train.batches_per_task: {unknown} are not training tasks ({tasks})")
    final = Phase("round_robin", tuple(tasks), None, bpt)
    if strategy == "fully_joint":
        return Schedule([final])
    if strategy == "single_task":
        if len(tasks) != 1:
            raise ConfigError(f"train.strategy single_task needs exactly one task in train.tasks, got {tasks}")
        return Schedule([Phase("single_task", tuple(tasks), None, bpt)])
    if strategy in PRESET_FIRST_PHASE:
        if phase_iterations <= 0:
            raise ConfigError(f"train.phase_iterations must be positive for strategy {strategy}")
        first = [t for t in PRESET_FIRST_PHASE[strategy] if t in tasks]
        if not first:
            log.warning("strategy %s: none of its first-phase tasks %s is trained; running fully joint",
                        strategy, PRESET_FIRST_PHASE[strategy])
            return Schedule([final])
        if len(first) < len(PRESET_FIRST_PHASE[strategy]):
            log.warning("strategy %s: first phase reduced to the trained tasks %s", strategy, first)
        return Schedule([Phase(strategy, tuple(first), phase_iterations, {}), final])
    if strategy == "custom":
        return Schedule([*(_custom_phase(i, spec, tasks, phase_iterations) for i, spec in enumerate(phases)), final])
    raise ConfigError(f"train.strategy: unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")


def _custom_phase(i: int, spec: Mapping[str, Any], tasks: Sequence[str], default_iterations: int) -> Phase:
    """One phase of train.phases; a phase without `iterations` lasts train.phase_iterations."""
    where = f"train.phases[{i}]"
    allowed = {"name", "tasks", "iterations", "batches_per_task"}
    if not isinstance(spec, Mapping) or set(spec) - allowed:
        raise ConfigError(f"{where}: expected a mapping with keys {sorted(allowed)}, got {spec!r}")
    names = spec.get("tasks")
    if not isinstance(names, list) or not names:
        raise ConfigError(f"{where}.tasks: expected a non-empty list of training tasks")
    missing = [t for t in names if t not in tasks]
    if missing:
        raise ConfigError(f"{where}.tasks: {missing} are not in train.tasks ({list(tasks)})")
    n = spec.get("iterations", default_iterations)
    if isinstance(n, bool) or not isinstance(n, int) or n <= 0:
        raise ConfigError(f"{where}.iterations: expected a positive integer, got {n!r}")
    bpt = dict(spec.get("batches_per_task") or {})
    if any(isinstance(k, bool) or not isinstance(k, int) or k <= 0 for k in bpt.values()) or set(bpt) - set(names):
        raise ConfigError(f"{where}.batches_per_task: positive integers for tasks of this phase only")
    return Phase(str(spec.get("name", f"phase{i}")), tuple(names), n, bpt)


def from_config(train_cfg, tasks: Sequence[str]) -> Schedule:
    """The schedule described by a `deca.config.TrainConfig` over the resolved training tasks.

    A preset whose first phase would last the whole run is refused: the run would train on its first-phase
    tasks only and be scored on all of them (e.g. anti_curriculum_squad on a 200-iteration run)."""
    first = [t for t in PRESET_FIRST_PHASE.get(train_cfg.strategy, ()) if t in tasks]
    if first and len(first) < len(tasks) and train_cfg.phase_iterations >= train_cfg.iterations:
        raise ConfigError(
            f"train.strategy {train_cfg.strategy}: its first phase (train.phase_iterations = "
            f"{train_cfg.phase_iterations}, on {', '.join(first)} only) leaves none of the train.iterations = "
            f"{train_cfg.iterations} for the joint phase; set train.phase_iterations below train.iterations "
            f"(the paper: 75,000 of about 560,000), e.g. --set train.phase_iterations={train_cfg.iterations // 4}")
    return build_schedule(train_cfg.strategy, tasks, phase_iterations=train_cfg.phase_iterations,
                          phases=train_cfg.phases, batches_per_task=train_cfg.batches_per_task)
