"""The generated parts of dvc.yaml: the per-task tables and each stage's code dependencies.

DVC's ``foreach`` needs the task list spelled out, with what each task's stages depend on: the module
that registers the task, and the folder of the mirror that holds its raw files. And a stage that
declares exactly the code it runs lists the source files its command imports (infra/codedeps.py).
This module writes both into dvc.yaml, between ``# BEGIN <name>`` / ``# END <name>`` marker lines,
and adds a ``prepare.task_options.<key>`` entry to params.yaml for each task that lacks one (DVC
needs every declared param to exist):

    python -m infra.stages --check     # exit 1, showing the difference, when dvc.yaml is out of date
    python -m infra.stages --write     # after adding a task, changing data.tasks or a stage's imports
    python -m infra.stages             # print the dvc.yaml it would write

Each entry is keyed by ``Task.key`` (the name with '.' replaced by '_', since DVC reads dots in
params keys as nesting), which names the stages (``prepare@woz_en``) and the task's options in
params.yaml (``prepare.task_options.woz_en``).

It also writes the first stage, ``validate`` (`deca validate`: every check of params that the stages
run before they start), and its output as a dependency of the stages that read params (prepare, each
custom task's prepare, train; the others follow them): a bad value (``dvc exp run -S ...``) stops the
pipeline there, before any output is touched. A dvc.yaml without these blocks gets them on --write.
"""
from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from deca.checks import load_params
from deca.custom_tasks import declare
from deca.io import write_text
from deca.params_file import load_params_file
from deca.registry import all_tasks, get_task, resolve_tasks
from infra.codedeps import closure
from infra.params_yaml import write

ROOT = Path(__file__).resolve().parents[1]
BEGIN = "# BEGIN tasks"
END = "# END tasks"

# The modules each stage's command runs (deca/cli.py COMMANDS), and code paths it never takes.
# The task modules themselves are per-item dependencies (deca/tasks/${item.module}).
STAGE_CODE = {
    "download": (["pipelines.download_cli"], []),
    "prepare": (["pipelines.prepare_cli"], ["pipelines.vocab"]),  # + what the task modules import
    "custom": (["pipelines.prepare_cli", "deca.custom_tasks"], ["pipelines.vocab"]),  # prepare_<custom task>
    "vocab": (["pipelines.prepare_cli"], ["pipelines.prepare"]),
    "contamination": (["pipelines.contamination_cli"], []),
    "train": (["train.train_cli"], []),
    "evaluate": (["infer.evaluate_cli"], []),
    "report": (["eval.compare_cli"], []),
    # `deca validate --dvc-yaml none --stamp ...`: neither the dvc.yaml check nor overlays
    "validate": (["infra.validate_cli"], ["infra.stages", "infra.overlay"]),
}

# The validate stage: its output, which the stages that read params depend on (its text never changes, so a
# params change reruns only the stages that read it), and the params it checks (all of them).
VALIDATED = "data/params.valid"
VALIDATE_PARAMS = ("data", "prepare", "model", "train", "evaluate", "register", "custom_tasks")
VALIDATED_STAGES = ("prepare", "train")  # a "# BEGIN validated <stage>" block before "# BEGIN code <stage>"


def mirror_dir(task) -> str:
    """The top folder of the mirror (and raw layout) that holds every source file of `task`."""
    tops = {PurePosixPath(s.path).parts[0] for s in task.sources}
    tops |= {PurePosixPath(m).parts[0] for s in task.sources for m in s.members}
    if len(tops) != 1:
        raise ValueError(f"task {task.name!r}: sources span {sorted(tops)}; one folder per task is expected")
    return tops.pop()


_TABLE: dict[str, dict[str, str]] | None = None


def _all_entries() -> dict[str, dict[str, str]]:
    global _TABLE
    if _TABLE is None:

        _TABLE = {}
        for name, task in all_tasks().items():
            if task.group == "custom":  # declared in params.yaml: a stage of its own (custom_stages)
                continue
            if not task.module.startswith("deca.tasks."):
                raise ValueError(f"task {name!r} is registered from {task.module!r}, not a deca/tasks/ module")
            _TABLE[task.key] = {"name": name, "module": task.module.split(".")[-1] + ".py",
                                "corpus": mirror_dir(task)}
    return _TABLE


def entries(params_path: str | Path = ROOT / "params.yaml") -> dict[str, dict[str, dict[str, str]]]:
    """The two foreach tables of dvc.yaml for the tasks ``data.tasks`` selects, in registry order.

    ``tasks``: {task key: {name, module, corpus}}: one prepare stage each.
    ``corpora``: {mirror folder: {tasks (comma-separated names), module}}: one download stage each,
    shared by the tasks whose raw files live in that folder (e.g. woz.en and woz.de).
    ``custom``: {custom task name: [its JSONL files]}: one ``prepare_<name>`` stage each (custom_stages).
    """

    params = load_params(params_path)
    declare(params)
    table = _all_entries()
    selected = resolve_tasks(params.data.tasks)
    tasks = {k: dict(v) for k, v in table.items() if v["name"] in selected}
    custom = {name: [str(p) for split in get_task(name).splits for p in get_task(name).files(split, "")]
              for name in selected if get_task(name).group == "custom"}
    corpora: dict[str, dict[str, str]] = {}
    for e in tasks.values():
        c = corpora.setdefault(e["corpus"], {"tasks": "", "module": e["module"]})
        if c["module"] != e["module"]:
            raise ValueError(f"corpus folder {e['corpus']!r} is read by tasks of two modules ({c['module']}, "
                             f"{e['module']}); a download stage depends on one task module")
        c["tasks"] = f"{c['tasks']},{e['name']}".strip(",")
    return {"corpora": corpora, "tasks": tasks, "custom": custom}


def _flow(mapping: dict[str, str]) -> str:
    return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in mapping.items()) + "}"


def _scalar(value: str) -> str:

    return value if value and all(ch.isalnum() or ch in "._-" for ch in value) else json.dumps(value)


def render(tables: dict[str, dict[str, dict[str, str]]]) -> str:
    """The vars block, marker lines included."""
    lines = [f"  {BEGIN} (generated by `python -m infra.stages --write` from the registry and data.tasks)"]
    for table in ("corpora", "tasks"):
        lines.append(f"  - {table}:")
        for key, e in tables[table].items():
            lines.append(f"      {key}: {_flow(e)}")
    lines.append(f"  {END}")
    return "\n".join(lines) + "\n"


def missing_task_options(tables, params_path: str | Path = ROOT / "params.yaml") -> dict[str, dict]:
    """Task keys without an entry under prepare.task_options (DVC needs every declared param to exist),
    with each task's default options."""


    raw = load_params_file(params_path) or {}
    have = ((raw.get("prepare") or {}).get("task_options") or {})
    out = {}
    for key, e in tables["tasks"].items():
        if key not in have:
            out[key] = dataclasses.asdict(get_task(e["name"]).options())
    return out


def current(dvc_yaml: str | Path = ROOT / "dvc.yaml") -> dict[str, Any]:
    """The foreach tables dvc.yaml declares now."""
    data = yaml.safe_load(Path(dvc_yaml).read_text(encoding="utf-8"))
    out: dict[str, Any] = {"corpora": {}, "tasks": {}}
    for item in data.get("vars", []):
        if isinstance(item, dict):
            out.update({k: v for k, v in item.items() if k in out})
    return out


def code_deps(tables: dict[str, dict[str, dict[str, str]]]) -> dict[str, list[str]]:
    """Stage -> the source files its command imports (task modules excluded: they are per item)."""

    task_modules = sorted({f"deca.tasks.{e['module'][:-3]}" for e in tables["tasks"].values()})
    task_files = {f"deca/tasks/{e['module']}" for e in tables["tasks"].values()}
    out = {}
    for stage, (roots, exclude) in STAGE_CODE.items():
        extra = task_modules if stage == "prepare" else []
        out[stage] = [f for f in closure(roots + extra, exclude) if f not in task_files]
    return out


def render_code(stage: str, files: list[str], indent: str) -> str:
    roots = ", ".join(STAGE_CODE[stage][0])
    lines = [f"{indent}# BEGIN code {stage} (generated by `python -m infra.stages --write`: what {roots} imports)"]
    lines += [f"{indent}- {f}" for f in files]
    lines.append(f"{indent}# END code {stage}")
    return "\n".join(lines) + "\n"


CUSTOM_PARAMS = ("prepare.runner", "prepare.beam_options", "prepare.num_shards", "prepare.rows_per_shard",
                 "prepare.lowercase", "prepare.train_filter")


def render_custom(custom: dict[str, list[str]], code: list[str], indent: str) -> str:
    """One prepare stage per custom task (params.yaml custom_tasks): its files, the code, its entry."""
    lines = [f"{indent}# BEGIN custom stages (generated by `python -m infra.stages --write` from custom_tasks)"]
    for name, files in custom.items():
        lines += [f"{indent}prepare_{name}:",
                  f"{indent}  cmd: deca prepare --tasks {name} --out ${{data.processed_dir}}",
                  f"{indent}  deps:", *(f"{indent}    - {f}" for f in [*files, VALIDATED, *code]),
                  f"{indent}  params:", *(f"{indent}    - {p}" for p in (*CUSTOM_PARAMS, f"custom_tasks.{name}")),
                  f"{indent}  outs:", f"{indent}    - ${{data.processed_dir}}/{name}", ""]
    lines.append(f"{indent}# END custom stages")
    return "\n".join(lines) + "\n"


def render_validate(code: list[str], indent: str) -> str:
    """The validate stage (see the module docstring), its code dependencies included."""
    i = indent
    lines = [f"{i}# BEGIN validate stage (generated by `python -m infra.stages --write`)",
             f"{i}validate:",
             f"{i}  # Every check of params that the stages below run before they start (infra/validate_cli.py), first:",
             f"{i}  # a bad value (`dvc exp run -S train.strategy=zigzag`) stops the pipeline here, before any output is",
             f"{i}  # touched, and a refused experiment puts params.yaml back. The stages that read params depend on",
             f"{i}  # its output, whose text never changes (a params change reruns only the stages that read it).",
             f"{i}  cmd: deca validate --dvc-yaml none --stamp {VALIDATED}",
             f"{i}  deps:",
             render_code("validate", code, i + "    ").rstrip("\n"),
             f"{i}  params:", *(f"{i}    - {p}" for p in VALIDATE_PARAMS),
             f"{i}  outs:", f"{i}    - {VALIDATED}:", f"{i}        persist: true  # kept when the check fails",
             f"{i}# END validate stage"]
    return "\n".join(lines) + "\n"


def render_validated(stage: str, indent: str) -> str:
    """The validate stage's output as a dependency of `stage` (DVC runs validate first)."""
    return (f"{indent}# BEGIN validated {stage} (generated by `python -m infra.stages --write`: params checked first)\n"
            f"{indent}- {VALIDATED}\n{indent}# END validated {stage}\n")


def ensure_block(text: str, name: str, anchor: str, indent: str | None = None) -> str:
    """`text` with empty '# BEGIN <name>' / '# END <name>' lines before the first line that starts with
    `anchor` (after it when `indent` is given: a key's first child), unless they are there already."""
    if f"# BEGIN {name}" in text:
        return text
    lines = text.splitlines(keepends=True)
    at = next((i for i, ln in enumerate(lines) if ln.strip().startswith(anchor)), None)
    if at is None:
        raise ValueError(f"dvc.yaml: no line '{anchor}' to put the '# BEGIN {name}' block at")
    gap = ""
    if indent is None:
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
    else:
        at, gap = at + 1, "\n"  # a block of its own, like the keys around it
    return "".join(lines[:at]) + f"{indent}# BEGIN {name}\n{indent}# END {name}\n{gap}" + "".join(lines[at:])


def replace_block(text: str, name: str, render) -> str:
    """Replace the lines from '# BEGIN <name>' to '# END <name>' by render(indent of the BEGIN line)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, ln in enumerate(lines) if ln.strip().startswith(f"# BEGIN {name}")), None)
    stop = next((i for i, ln in enumerate(lines) if ln.strip().startswith(f"# END {name}")), None)
    if start is None or stop is None or stop < start:
        raise ValueError(f"dvc.yaml: the '# BEGIN {name}' ... '# END {name}' marker lines are missing")
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    return "".join(lines[:start]) + render(indent) + "".join(lines[stop + 1:])


def generate(text: str, tables: dict[str, dict[str, dict[str, str]]]) -> str:
    """dvc.yaml's text with every generated block brought up to date."""
    text = replace_block(text, "tasks", lambda indent: render(tables))
    codes = code_deps(tables)
    text = replace_block(text, "custom stages", lambda indent: render_custom(tables["custom"], codes["custom"], indent))
    text = ensure_block(text, "validate stage", "stages:", indent="  ")
    text = replace_block(text, "validate stage", lambda indent: render_validate(codes["validate"], indent))
    for stage in VALIDATED_STAGES:
        text = ensure_block(text, f"validated {stage}", f"# BEGIN code {stage}")
        text = replace_block(text, f"validated {stage}", lambda indent, s=stage: render_validated(s, indent))
    for stage, files in codes.items():
        if stage in ("custom", "validate"):
            continue
        text = replace_block(text, f"code {stage}", lambda indent, s=stage, f=files: render_code(s, f, indent))
    return text


def counts(tables: dict[str, dict]) -> str:
    """'<n> tasks (<k> custom), <m> corpora': every selected task, those of a task module (the ``tasks``
    table) and those of params.yaml's custom_tasks (their own stages) together."""
    n, custom = len(tables["tasks"]) + len(tables["custom"]), len(tables["custom"])
    return f"{n} tasks{f' ({custom} custom)' if custom else ''}, {len(tables['corpora'])} corpora"


def main(argv: list[str] | None = None) -> int:
    """`python -m infra.stages [--check | --write]`: see the module docstring; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m infra.stages", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="fail when dvc.yaml's task list is out of date")
    mode.add_argument("--write", action="store_true", help="rewrite the task list in dvc.yaml")
    parser.add_argument("--dvc-yaml", default=str(ROOT / "dvc.yaml"))
    parser.add_argument("--params", default=str(ROOT / "params.yaml"))
    args = parser.parse_args(argv)
    want = entries(args.params)
    options = missing_task_options(want, args.params)
    path = Path(args.dvc_yaml)
    text = path.read_text(encoding="utf-8")
    updated = generate(text, want)
    if args.check:

        ok = updated == text and not options
        if updated != text:
            sys.stdout.writelines(difflib.unified_diff(text.splitlines(keepends=True), updated.splitlines(keepends=True),
                                                       str(path), f"{path} (expected)"))
        for key in options:
            print(f"{args.params}: prepare.task_options.{key} is missing")
        if ok:
            print(f"{path}: up to date ({counts(want)})")
            return 0
        print(f"{path}: out of date; run `python -m infra.stages --write`", file=sys.stderr)
        return 1
    if args.write:

        write_text(path, updated)
        print(f"{path}: {counts(want)}, code dependencies up to date")
        if options:

            write(args.params, {"prepare": {"task_options": options}})
            print(f"{args.params}: added prepare.task_options for {', '.join(options)} (the tasks' defaults)")
        return 0
    sys.stdout.write(updated)
    return 0

if __name__ == "__main__":
    sys.exit(main())
