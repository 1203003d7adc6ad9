"""Tasks declared in params.yaml instead of a module: your own JSON-lines files as decaNLP tasks.

    custom_tasks:
      iwslt_de_en:                       # the task's name (letters, digits, '_')
        description: IWSLT14 German to English, TED talks
        metric: bleu                     # headline metric; one that needs only the gold answers
        files: {train: data/custom/de_en/train.jsonl, validation: data/custom/de_en/dev.jsonl}
        fields: {context: de, answer: en}   # the record's key for context/question/answer/id
        question: Translate from German to English   # for records without a question

Each line of a file is a JSON object with a ``context``, a ``question`` (or the task's ``question``),
an ``answer`` (a string, or a list of acceptable answers whose first is the training target) and an
optional ``id`` (default: the line number). A bad record is a DataError naming the file and line.
Relative paths are relative to the project directory (where `dvc repro` runs), not to data.raw_dir.

Building params registers nothing (deca.config.Params is plain data). `declare(params)` makes exactly
their custom tasks registered, so they go through `deca prepare`, train, evaluate, score and compare like
the registered ones; every process that takes params calls it once: each command through
deca.config.params_from_args, the training driver and its Ray workers (train/driver.py, train/worker.py),
`python -m infra.stages` (which gives each custom task its own DVC prepare stage).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

from deca.errors import ConfigError, DataError
from deca.registry import SPLITS, Example, Task, all_tasks, set_custom_tasks
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
    fields = {f: cfg.fields.get(f, f) for f in FIELDS}
    reader = JsonlReader(name, fields, cfg.question)
    return CustomTask(name=name, description=cfg.description or f"custom task ({', '.join(cfg.files.values())})",
                      metric=cfg.metric, sources=(), splits={s: (p,) for s, p in cfg.files.items()},
                      read=reader)


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
