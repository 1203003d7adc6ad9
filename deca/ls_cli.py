"""`deca ls`: every registered task with its splits, metric and sources (the custom tasks of params.yaml too)."""
from __future__ import annotations

import argparse
import json

from deca.checks import params_from_args
from deca.params_args import add_params_arguments
from deca.registry import all_tasks, resolve_tasks


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("tasks", nargs="*", default=["all"], help="task names or globs (default: all)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--sources", action="store_true", help="also list every source file with its URL")
    add_params_arguments(parser)  # its custom_tasks are listed with the registered ones


def describe(names: list[str]) -> list[dict]:
    tasks = all_tasks()
    out = []
    for name in names:
        t = tasks[name]
        out.append({
            "name": t.name,
            "group": t.group,
            "metric": t.metric,
            "splits": {s: list(f) for s, f in t.splits.items()},
            "eval_only": t.eval_only,
            "sources": [{"path": s.path, "url": s.url, "sha256": s.sha256, "md5": s.md5} for s in t.sources],
            "description": t.description,
        })
    return out


def run(args: argparse.Namespace) -> int:
    params_from_args(args)
    rows = describe(resolve_tasks(args.tasks))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    width = max(len(r["name"]) for r in rows)
    print(f"{'task':<{width}}  {'group':<9}  {'metric':<13}  splits")
    for r in rows:
        splits = ", ".join(r["splits"]) + (" (eval only)" if r["eval_only"] else "")
        print(f"{r['name']:<{width}}  {r['group']:<9}  {r['metric']:<13}  {splits}")
        if args.sources:
            for s in r["sources"]:
                check = "sha256" if s["sha256"] else ("md5" if s["md5"] else "unverified")
                print(f"{'':<{width}}    {s['path']}  <- {s['url'] or '(no public URL)'}  [{check}]")
    print(f"\n{len(rows)} tasks")
    return 0
