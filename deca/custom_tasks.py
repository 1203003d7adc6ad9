"""Tasks declared in params.yaml instead of a module: your own JSON-lines files as decaNLP tasks.

    custom_tasks:
      iwslt_de_en:                       # the task's name (letters, digits, '_')
        description: IWSLT14 German to English, TED talks
        metric: bleu                     # headline metric; one that needs only the gold answers
        files: {train: data/custom/de_en/train.jsonl, validation: data/custom/de_en/dev.jsonl}
        fields: {context: de, answer: en}   # the record's key for context/question/answer/id
        question: Translate from German to English   # for records without a question

A task can also read files in a registered task's format, cast as that task casts them (``reader: squad``),
and keep a slice of their groups per split (``groups``; SQuAD's groups are its articles, in file order), e.g.
Table 3's SQuAD-derived task from the SQuAD development set alone (infra/params/table3.yaml):

    custom_tasks:
      squad_dev:
        metric: nf1
        reader: squad                    # the official SQuAD JSON, cast as the squad task does
        files: {train: ../shared/corpora/squad/dev-v1.1.json, validation: ../shared/corpora/squad/dev-v1.1.json}
        groups: {train: [0, 40], validation: [40, 48]}   # articles 0-39 to train on, 40-47 held out

Each line of a (jsonl) file is a JSON object with a ``context``, a ``question`` (or the task's ``question``),
an ``answer`` (a string, or a list of acceptable answers whose first is the training target) and an
optional ``id`` (default: the line number). A bad record is a DataError naming the file and line.
Relative paths are relative to the project directory (where `dvc repro` runs), not to data.raw_dir.

Building params registers nothing (deca.config.Params is plain data). `declare(params)` makes exactly
their custom tasks registered, so they go through `deca prepare`, train, evaluate, score and compare like
the registered ones; every process that takes params calls it once: each command through
deca.checks.params_from_args, the training driver and its Ray workers (train/driver.py, train/worker.py),
`python -m infra.stages` (which gives each custom task its own DVC prepare stage).
"""
from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from deca.errors import ConfigError, DataError
from deca.registry import SPLITS, Example, NoOptions, Task, all_tasks, get_task, set_custom_tasks
from deca.tasks._lines import iter_json_objects

if TYPE_CHECKING:
    from deca.config import CustomTaskConfig, Params

NAME = re.compile(r"^[a-z][a-z0-9_]*$")
FIELDS = ("context", "question", "answer", "id")
# Metrics computed from other gold than the answers (WOZ's belief state, WikiSQL's query) cannot be used.
NEEDS_GOLD = ("joint_goal_em", "turn_request_em", "turn_goal_em", "avg_dialogue", "lfem", "lf_unordered",
              "exec_acc")


@dataclass(frozen=True)
class CustomTask(Task):
    """A task from params.yaml: its split files are paths of their own, not under the raw directory."""

    group: str = "custom"
    module: str = __name__  # registered from params.yaml through this module

    def files(self, split: str, raw_dir: str | Path) -> list[Path]:
        return [Path(p) for p in self.splits[split]]

    def check_files(self, split: str) -> None:
        """A DataError for an empty file of `split` (before `deca prepare`'s check of downloaded files, which
        would say to re-download it: this one is the user's own file)."""
        for path in self.files(split, ""):
            if path.is_file() and path.stat().st_size == 0:
                raise self.read.empty_file(split, path)


def declare(params: "Params") -> list[Task]:
    """Register exactly the custom tasks of `params` (replacing those declared before); returns them."""
    tasks = make_tasks(params)
    set_custom_tasks(tasks)
    return tasks


def make_tasks(params: "Params") -> list[CustomTask]:
    """The tasks of `params.custom_tasks`, checked but not registered; a ConfigError names a bad entry."""
    tasks = [make_task(name, cfg) for name, cfg in params.custom_tasks.items()]
    registered = all_tasks()
    taken = [t.name for t in tasks if t.name in registered and registered[t.name].group != "custom"]
    if taken:
        raise ConfigError(f"custom_tasks.{taken[0]}: a registered task has that name; choose another")
    return tasks


def make_task(name: str, cfg: "CustomTaskConfig") -> CustomTask:
    """The task of one ``custom_tasks.<name>`` entry; a ConfigError names the bad key."""
    where = f"custom_tasks.{name}"
    if not NAME.match(name):
        raise ConfigError(f"{where}: a custom task's name must be lowercase letters, digits and '_' "
                          f"(a DVC params key), e.g. {re.sub(r'[^a-z0-9_]', '_', name.lower())!r}")
    if not cfg.files:
        raise ConfigError(f"{where}.files: give at least one split, e.g. {{train: data/custom/{name}/train.jsonl}}")
    bad = sorted(set(cfg.files) - set(SPLITS)) + sorted(set(cfg.fields) - set(FIELDS))
    if bad:
        raise ConfigError(f"{where}: unknown split or field name(s) {bad}; splits: {', '.join(SPLITS)}; "
                          f"fields: {', '.join(FIELDS)}")
    if cfg.metric in NEEDS_GOLD:
        raise ConfigError(f"{where}.metric: {cfg.metric!r} needs a task's own gold structure; "
                          f"use a metric of the answers (em, nf1, bleu, rouge, corpus_f1)")
    base = _base_task(name, cfg)
    reader = JsonlReader(name, {f: cfg.fields.get(f, f) for f in FIELDS}, cfg.question) if base is None \
        else TaskReader(base.name)
    if cfg.groups:
        reader = GroupSlice(name, reader, _group_slices(name, cfg))
    return CustomTask(name=name, description=cfg.description or f"custom task ({', '.join(cfg.files.values())})",
                      metric=cfg.metric, sources=(), splits={s: (p,) for s, p in cfg.files.items()},
                      read=reader, options=base.options if base else NoOptions,
                      row_hook=base.row_hook if base else None)


def _base_task(name: str, cfg: "CustomTaskConfig") -> Task | None:
    """The registered task whose reader `cfg.reader` names (None for jsonl); a ConfigError says what is wrong."""
    if cfg.reader == "jsonl":
        return None
    where = f"custom_tasks.{name}.reader"
    base = all_tasks().get(cfg.reader)
    if base is None or base.group == "custom":
        close = difflib.get_close_matches(cfg.reader, [n for n, t in all_tasks().items() if t.group != "custom"], 3)
        raise ConfigError(f"{where}: {cfg.reader!r} is neither jsonl nor a registered task"
                          + (f"; did you mean {', '.join(close)}?" if close else " (`deca ls` lists them)"))
    if cfg.fields or cfg.question is not None:
        raise ConfigError(f"{where}: fields and question apply to jsonl files only; the {cfg.reader} reader "
                          "casts its own records (remove them)")
    return base


def _group_slices(name: str, cfg: "CustomTaskConfig") -> dict[str, tuple[int, int | None]]:
    """{split: (start, stop)} from ``groups: {split: [start, stop]}`` (stop null: to the last group); a
    ConfigError names a bad entry. (A list, not "40:48": YAML 1.1 reads an unquoted 40:48 as the number 2448.)"""
    slices = {}
    for split, value in cfg.groups.items():
        where = f"custom_tasks.{name}.groups.{split}"
        if split not in cfg.files:
            raise ConfigError(f"{where}: no such split under custom_tasks.{name}.files ({', '.join(cfg.files)})")
        ok = (isinstance(value, list) and len(value) == 2 and isinstance(value[0], int)
              and (value[1] is None or isinstance(value[1], int)) and not any(isinstance(v, bool) for v in value)
              and value[0] >= 0)
        if not ok:
            raise ConfigError(f"{where}: {value!r} is not [start, stop] of the groups in file order, "
                              "e.g. [0, 40] or [40, null]")
        start, stop = value
        if stop is not None and stop <= start:
            raise ConfigError(f"{where}: {value!r} selects no group (stop <= start)")
        slices[split] = (start, stop)
    return slices


@dataclass(frozen=True)
class TaskReader:
    """Reads a custom task's files with a registered task's reader (picklable: holds the task's name)."""

    task: str

    def __call__(self, split: str, files: Sequence[Path], options: Any) -> Iterator[Example]:
        for path in files:
            if not Path(path).is_file():
                raise DataError(path, f"{split} file not found", fix="create it, or change the custom task's files "
                                "in params.yaml")
        return get_task(self.task).read(split, files, options)


@dataclass(frozen=True)
class GroupSlice:
    """Keeps the examples of a slice of the groups (e.g. SQuAD articles, in the order they first appear)."""

    task: str
    reader: Any
    slices: Mapping[str, tuple[int, int | None]]

    def __call__(self, split: str, files: Sequence[Path], options: Any) -> Iterator[Example]:
        if split not in self.slices:
            yield from self.reader(split, files, options)
            return
        start, stop = self.slices[split]
        order: dict[str, int] = {}
        kept = 0
        for example in self.reader(split, files, options):
            if not isinstance(example, Example):
                yield example  # a Dropped record passes through with its reason
                continue
            if example.group is None:
                raise DataError(files[0], f"custom task {self.task!r}: its reader gives examples no group, so "
                                          f"custom_tasks.{self.task}.groups cannot split them",
                                fix="use a reader whose examples have groups (squad: articles), or remove groups")
            index = order.setdefault(example.group, len(order))
            if index >= start and (stop is None or index < stop):
                kept += 1
                yield example
        if not kept:
            raise DataError(files[0], f"custom_tasks.{self.task}.groups.{split} = [{start}, {stop}] selects no "
                                      f"example: the file has {len(order)} groups",
                            fix=f"choose a slice within [0, {len(order)}]")


@dataclass(frozen=True)
class JsonlReader:
    """Reads one custom task's JSON-lines file into examples (a picklable callable, for Beam workers)."""

    task: str
    fields: Mapping[str, str]
    question: str | None

    def __call__(self, split: str, files: Sequence[Path], options: Any) -> Iterator[Example]:
        seen: set[str] = set()
        fix = (f"correct the line, or the file named under custom_tasks.{self.task}.files.{split} in params.yaml; "
               f"each line is {{\"context\": ..., \"question\": ..., \"answer\": ...}}")
        for path in files:
            if not Path(path).is_file():
                raise DataError(path, f"custom task {self.task!r}: {split} file not found",
                                fix=f"create it, or change custom_tasks.{self.task}.files.{split} in params.yaml")
            records = 0
            for line, record in iter_json_objects(path, fix):
                example = self.example(record, path, line, fix)
                if example.id in seen:
                    raise DataError(path, f"id {example.id!r} given twice", line=line,
                                    fix="give every record its own id (or none: the line number is used)")
                seen.add(example.id)
                records += 1
                yield example
            if not records:
                raise self.empty_file(split, path)

    def empty_file(self, split: str, path: Path) -> DataError:
        """The error for a file of this task with no record: it is the user's own file, so say what goes in it."""
        what = "empty" if Path(path).stat().st_size == 0 else "has only blank lines"
        return DataError(path, f"the {split} file of your custom task {self.task!r} (custom_tasks.{self.task}.files."
                               f"{split} in params.yaml) is {what}: it holds no example",
                         fix=f"put one JSON object per line in it, e.g. {self.example_line()}; or point "
                             f"custom_tasks.{self.task}.files.{split} at the file that has them")

    def example_line(self) -> str:
        """One line of this task's file, with its field names (custom_tasks.<task>.fields)."""
        record = {self.fields["context"]: "...", self.fields["question"]: "...", self.fields["answer"]: "..."}
        if self.question is not None:
            del record[self.fields["question"]]  # the task's question is used
        return json.dumps(record)

    def example(self, record: dict, path: Path, line: int, fix: str) -> Example:
        """One record as an Example; a DataError names the line and the field."""
        context = self._text(record, "context", path, line, fix)
        question = self._text(record, "question", path, line, fix, default=self.question)
        key = self.fields["answer"]
        answer = record.get(key)
        answers = answer if isinstance(answer, list) else [answer]
        if not answers or not all(isinstance(a, str) for a in answers):
            raise DataError(path, f"field {key!r} must be a string or a non-empty list of strings, got {answer!r:.60}",
                            line=line, fix=fix)
        rid = record.get(self.fields["id"], line)
        if not isinstance(rid, (str, int)) or isinstance(rid, bool):
            raise DataError(path, f"field {self.fields['id']!r} must be a string or an integer", line=line, fix=fix)
        return Example(id=str(rid), context=context, question=question, answer=answers[0], answers=list(answers))

    def _text(self, record: dict, name: str, path: Path, line: int, fix: str, default: str | None = None) -> str:
        key = self.fields[name]
        value = record.get(key, default)
        if value is None:
            also = f" and custom_tasks.{self.task}.question is not set" if name == "question" else ""
            raise DataError(path, f"record has no {key!r} field{also}", line=line, fix=fix)
        if not isinstance(value, str):
            raise DataError(path, f"field {key!r} must be a string, got {value!r:.60}", line=line, fix=fix)
        return value
