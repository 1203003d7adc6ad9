"""The one registry of tasks.

A task is declared once, in its own module under `deca/tasks/`: its sources (official URLs with
checksums), its splits (which raw files each split reads), how raw records become
(context, question, answer) examples, its options (the paper's filters as params) and its headline
metric. Modules in `deca/tasks/` are discovered automatically: adding a corpus means adding one
module (and its fixture under tests/fixtures/corpora), nothing else.

Raw files are addressed by a path relative to the raw directory, which is also the layout of a mirror
(see ../shared/corpora): e.g. ``squad/dev-v1.1.json``.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import deca.tasks
from deca.config import from_dict
from deca.errors import ConfigError, UnknownName

SPLITS = ("train", "validation", "test")

# The ten decaNLP tasks, in the paper's order (Table 1); their headline metrics sum to the decaScore.
DECANLP = (
    "squad", "iwslt.en.de", "cnn_dailymail", "multinli.in.out", "sst",
    "srl", "zre", "woz.en", "wikisql", "schema",
)


@dataclass(frozen=True)
class Source:
    """One file of a task's official distribution.

    `path` is where the file lives under the raw directory (and under a mirror). For an archive,
    `members` lists the files (also relative to the raw directory) that extracting it provides; a
    mirror may hold either the archive or those members.
    """

    path: str
    url: str | None
    sha256: str | None = None
    md5: str | None = None
    members: tuple[str, ...] = ()
    extract_to: str | None = None  # directory (relative to raw dir) to extract an archive into
    note: str = ""  # how to obtain the file by hand when the URL is dead or needs a login


@dataclass
class Example:
    """A task example before tokenization. Text is as in the raw data (case kept)."""

    id: str
    context: str
    question: str
    answer: str
    answers: list[str] | None = None  # every gold answer; defaults to [answer]
    gold: dict[str, Any] | None = None  # what the metric needs beyond the answers (JSON-serializable)
    group: str | None = None  # the unit examples come in (a SQuAD article), for splits by group; not stored


@dataclass
class Dropped:
    """An example (or raw record) left out on purpose, with the reason. Never dropped silently."""

    id: str
    reason: str
    detail: str = ""


@dataclass(frozen=True)
class NoOptions:
    """Tasks without options."""


Reader = Callable[[str, Sequence[Path], Any], Iterator["Example | Dropped"]]
# Called on each tokenized row (a dict in the processed schema) with (row, split, options).
# Returns the row (possibly changed, e.g. truncated) or a Dropped.
RowHook = Callable[[dict, str, Any], "dict | Dropped"]


@dataclass(frozen=True)
class Task:
    """A registered task. See the module docstring."""

    name: str
    description: str
    metric: str  # headline metric name in eval's metric registry
    sources: tuple[Source, ...]
    splits: Mapping[str, tuple[str, ...]]  # split name -> raw files it reads (relative to raw dir)
    read: Reader  # (split, absolute file paths, options) -> examples / drops, in file order
    options: type = NoOptions
    row_hook: RowHook | None = None
    eval_only: bool = False
    group: str = "decanlp"  # decanlp | nli | mrqa | sentiment
    paper_counts: Mapping[str, int] = field(default_factory=dict)  # Table 1 counts where the paper gives them
    # the module that registered the task (set by `register`); its file is what the task's DVC stages
    # depend on (infra/stages.py)
    module: str = ""

    @property
    def key(self) -> str:
        """Name usable as a params.yaml / DVC key (no dots)."""
        return self.name.replace(".", "_")

    def make_options(self, values: Mapping[str, Any] | None = None) -> Any:
        return from_dict(self.options, values or {}, where=f"prepare.task_options.{self.key}")

    def files(self, split: str, raw_dir: str | Path) -> list[Path]:
        return [Path(raw_dir) / rel for rel in self.splits[split]]


_REGISTRY: dict[str, Task] = {}
_LOADED = False


def register(task: Task, module: str | None = None) -> Task:
    """Add a task to the registry (called at import time by the modules in deca/tasks/); returns it as
    registered: with `Task.module` set to the module registering it, `module` if given (a helper module
    registering on behalf of a task module), else the task's own, else the caller's."""
    if not task.module or module:
        task = dataclasses.replace(task, module=module or sys._getframe(1).f_globals.get("__name__", ""))
    if task.name in _REGISTRY and _REGISTRY[task.name] != task:
        raise ValueError(f"task {task.name!r} registered twice")
    unknown = set(task.splits) - set(SPLITS)
    if unknown:
        raise ValueError(f"task {task.name!r}: unknown split(s) {sorted(unknown)}; use {SPLITS}")
    _REGISTRY[task.name] = task
    return task


def set_custom_tasks(tasks: Sequence[Task]) -> None:
    """Make `tasks` the custom tasks (params.yaml's ``custom_tasks``, deca/custom_tasks.py): those declared
    before are removed; a name of a module's task is refused."""
    _load_all()
    for name in [n for n, t in _REGISTRY.items() if t.group == "custom"]:
        del _REGISTRY[name]
    for task in tasks:
        if task.name in _REGISTRY:
            raise ConfigError(f"custom_tasks.{task.name}: a registered task has that name; choose another")
        register(task)


def _load_all() -> None:
    global _LOADED
    if _LOADED:
        return
    for info in sorted(pkgutil.iter_modules(deca.tasks.__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"deca.tasks.{info.name}")
    _LOADED = True


def all_tasks() -> dict[str, Task]:
    """Every registered task, by name (decaNLP tasks first, in the paper's order)."""
    _load_all()
    order = {name: i for i, name in enumerate(DECANLP)}
    return dict(sorted(_REGISTRY.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))


def get_task(name: str) -> Task:
    """The task called `name`; an UnknownName (a KeyError) suggests the closest registered names."""
    tasks = all_tasks()
    if name not in tasks:
        raise UnknownName("task", name, tasks, "`deca ls` lists them")
    return tasks[name]


def resolve_tasks(selectors: Sequence[str] | str) -> list[str]:
    """Expand task selectors: names, globs (``mrqa.*``), ``decanlp`` (the ten) or ``all``."""
    if isinstance(selectors, str):
        selectors = [s for s in selectors.replace(",", " ").split() if s]
    tasks = all_tasks()
    out: list[str] = []
    for sel in selectors:
        if sel == "all":
            names = list(tasks)
        elif sel == "decanlp":
            names = list(DECANLP)
        elif any(ch in sel for ch in "*?["):
            names = [n for n in tasks if fnmatch.fnmatchcase(n, sel)]
            if not names:
                raise UnknownName("task", sel, _pattern_hints(tasks), "`deca ls` lists them", pattern=True)
        else:
            get_task(sel)
            names = [sel]
        out.extend(n for n in names if n not in out)
    return out


def _pattern_hints(names) -> list[str]:
    """What a task pattern may have meant: the names, and ``<prefix>.*`` of each dotted family (``mrqa.*``)."""
    families = {n.split(".", 1)[0] + ".*" for n in names if "." in n}
    return sorted(families) + list(names)
