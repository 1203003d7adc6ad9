"""experiments/grid.sh: the names and commands of every planned run (DRY_RUN), and the grid rehearsed small on the
CPU: the planned MWSC runs, two slots at a time, each leaving its curve and its per-example record in the export
(with the machine) as it ends; a second call finds them done; a zero-shot SST model then answers the renamed
questions, kept per example. Slow: it prepares the real corpora and trains three tiny models. Table 3's export ->
records -> pages step: tests/experiments/results/test_grid_runs.py, on folders a real rehearsal exported."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from experiments import plan
from experiments.results import examples, grid_runs, records
from tests.conftest import ROOT, SHARED_CORPORA

TINY = ("model.dimension=16 model.ff_hidden=16 model.heads=2 model.transformer_layers=1 model.rnn_layers=1 "
        "model.embedding_dim=16 model.word_vectors=null model.max_generative_vocab=200 model.max_answer_length=8 "
        "train.token_budget=400 train.val_batch_size=64")


def test_the_dry_run_names_every_planned_run_and_its_command(tmp_path):
    """Each table's folder names (the records' run names) and single_task.py commands: Table 3's five tasks with its
    strategy, its first phase 2/15 of the scaled budget and its own workdir; a zero-shot group's task list."""
    env = {**os.environ, "DRY_RUN": "1", "ITERS_SCALE": "0.1", "GRID_OUT": str(tmp_path / "runs"), "DEVICE": "cpu",
           "TABLE3_WORKDIR": "t3", "WORKDIR": "w", "SET": "train.max_val_examples=50",
           "PY": str(ROOT / ".venv" / "bin" / "python"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run(["bash", "experiments/grid.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=120).stdout
    commands = dict(line.split(": ", 1) for line in out.splitlines() if not line.startswith("["))
    assert len(commands) == len(plan.run_lines(records.load("plan"))) and not (tmp_path / "runs").exists()
    t3 = commands["table3-anti_curriculum-s7"]
    assert ("--task squad_dev,sst,srl,woz.en,schema --iterations 480 --val-every 60 --overlay infra/params/glove.yaml "
            "--overlay infra/params/table3.yaml --set train.strategy=custom --set train.phase_iterations=64 "
            "--workdir t3 --set train.seed=7 --set train.max_val_examples=50 --device cpu") in t3
    assert t3.endswith(str(tmp_path / "runs" / "table3-anti_curriculum-s7"))
    assert "--set train.strategy=curriculum" in commands["table3-curriculum-s123"]
    assert "--task sst,schema --iterations 240 --val-every 20" in commands["zero-shot-sst-schema-s5"]
    assert "--set model.variant=s2s" in commands["srl-s2s-s11"] and "--workdir w" in commands["srl-s2s-s11"]
    assert "model.variant" not in commands["zero-shot-sst-s123"] and "--workdir w" in commands["zero-shot-sst-s123"]


@pytest.mark.slow
def test_the_grid_runs_the_plan_and_exports_per_example_records(tmp_path):
    if not (SHARED_CORPORA / "schema").is_dir():
        pytest.skip(f"real corpora not found at {SHARED_CORPORA}")
    env = {**os.environ, "DECA_SHARED_CORPORA": str(SHARED_CORPORA), "DEVICE": "cpu", "PARALLEL": "2",
           "ITERS_SCALE": "0.01", "TABLES": "table2", "TASKS": "schema", "ALL": "1", "LIMIT": "2", "BUDGET_S": "400",
           "MIN_RUN_S": "30", "GRID_OUT": str(tmp_path / "runs"), "EXPORT": str(tmp_path / "export"),
           "WORKDIR": str(tmp_path / "work"), "SET": TINY, "PY": str(ROOT / ".venv" / "bin" / "python"),
           "PYTHONPATH": str(ROOT)}
    first = subprocess.run(["bash", "experiments/grid.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
    assert "2 to do" in first.stdout and first.stdout.count("done: schema-") == 2, first.stdout + first.stderr
    for name in ("schema-s2s-s123", "schema-satt-s123"):
        curve = json.loads((tmp_path / "export" / name / "curve.json").read_text())
        kept = examples.read(tmp_path / "export" / name / examples.FILE)["tasks"]["schema"]
        assert kept["n"] == 82 and kept["cluster_by"] == "schema" and len(set(kept["clusters"])) == 41
        assert kept["headline"] == pytest.approx(max(p["headline"] for p in curve["curve"]), abs=1e-3)
    machine = json.loads((tmp_path / "export" / "machine.json").read_text())
    assert machine["gpu"] is None and machine["commit"] and machine["cores"] >= 1
    again = subprocess.run(["bash", "experiments/grid.sh"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=300)
    assert "0 to do" in again.stdout, again.stdout + again.stderr
    # the zero-shot path on the same workdir: one SST model, then the renamed questions, kept and exported
    zero = {**env, "TABLES": "zero_shot", "TASKS": "sst", "LIMIT": "1", "SET": TINY + " train.max_val_examples=50",
            "RENAMED_S": "300", "RENAMED_MAX": "50", "ITERS_SCALE": "0.002"}  # 2 iterations, 50 sentences each
    asked = subprocess.run(["bash", "experiments/grid.sh"], cwd=ROOT, env=zero, capture_output=True, text=True,
                           timeout=600)
    out = tmp_path / "export" / "zero-shot-sst-s123"
    assert "done: zero-shot-sst-s123" in asked.stdout and "FAILED" not in asked.stdout, asked.stdout + asked.stderr
    figures = json.loads((out / grid_runs.FIGURES).read_text())
    kept = examples.read(out / grid_runs.RENAMED)["tasks"]
    assert set(figures) == set(kept) == {"sst", "sst.happy_angry", "sst.supportive_unsupportive"}
    assert all(kept[t]["n"] == 50 and kept[t]["headline"] == pytest.approx(figures[t]["em"], abs=1e-3) for t in kept)


PLANNED = "table2 schema s2s 123 800\\ntable2 schema satt 123 800\\n"
FAKE_PY = """#!/usr/bin/env bash
# stands in for python: the planned runs, each waiting for SIGTERM, on which it saves a state and exits as a run does
case "$*" in
  "-m experiments.plan runs") printf '@PLANNED@' ;;
  "-m experiments.single_task run"*)
    out=${@: -1}; mkdir -p "$out"; trap 'echo saved > "$out/state"; exit 3' TERM; echo $$ > "$out/pid"
    echo "$*" > "$out/command"
    while :; do sleep 0.1; done ;;
  "- "*) cat >/dev/null; printf '{"commit": "%s"}' "$COMMIT" > "$2" ;;
esac
"""


def test_a_run_finished_shorter_than_planned_is_continued_and_a_longer_one_skipped(tmp_path):
    """A budget doubled by the plan: the run finished at 800 iterations is pending again (single_task.py continues it
    from its kept state); one finished at the planned length or more is not."""
    env, runs = fake_grid(tmp_path, "table2 schema s2s 123 1600\\ntable2 schema satt 123 1600\\n"
                                    "table2 schema catt 123 1600\\n")
    for name, iterations in (("schema-s2s-s123", 800), ("schema-catt-s123", 1600)):
        (runs / name).mkdir(parents=True)
        (runs / name / "curve.json").write_text(json.dumps({"task": "schema", "iterations": iterations}, indent=2))
    grid = subprocess.Popen(["bash", "experiments/grid.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    pids = started(runs)
    grid.send_signal(signal.SIGTERM)
    out, _ = grid.communicate(timeout=30)
    assert "3 planned runs here, 2 to do" in out, out
    assert "--iterations 1600" in (runs / "schema-s2s-s123" / "command").read_text()
    assert all(p.is_file() for p in pids) and not (runs / "schema-catt-s123" / "pid").exists()
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    machine = json.loads((tmp_path / "ex" / "machine.json").read_text())  # the commit at the grid's start
    assert machine["commit"] == head.strip() and head.strip()


def fake_grid(tmp_path: Path, plan_lines: str = PLANNED) -> tuple[dict, Path]:
    fake = tmp_path / "python"
    fake.write_text(FAKE_PY.replace("@PLANNED@", plan_lines))
    fake.chmod(0o755)
    runs = tmp_path / "runs"
    env = {**{k: v for k, v in os.environ.items() if k != "COMMIT"}, "PY": str(fake), "GRID_OUT": str(runs), "WORKDIR": str(tmp_path / "work"), "PARALLEL": "2",
           "TABLES": "table2", "BUDGET_S": "300", "MARGIN_S": "1", "MIN_RUN_S": "1", "EXPORT": str(tmp_path / "ex")}
    return env, runs


def started(runs: Path, names=("schema-s2s-s123", "schema-satt-s123")) -> list[Path]:
    pids = [runs / name / "pid" for name in names]
    deadline = time.monotonic() + 30
    while not all(p.is_file() and p.read_text().strip() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pids


@pytest.mark.parametrize("everyone", [False, True], ids=["the grid", "every process of the grid"])
def test_a_signal_to_the_grid_stops_its_runs_with_their_state_saved(tmp_path, everyone):
    """SIGTERM to grid.sh reaches each running run (through its `timeout`), which saves its state; the grid waits for
    them and exits 143, leaving no run behind (before, the runs went on as orphans). Also when the signal reaches
    the grid's run slots too, as `pkill -f grid.sh` sends it (they die at once: the grid finds the runs by pid)."""
    env, runs = fake_grid(tmp_path)
    grid = subprocess.Popen(["bash", "experiments/grid.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True)
    pids = started(runs)
    if everyone:
        slots = subprocess.run(["pgrep", "-P", str(grid.pid), "bash"], capture_output=True, text=True).stdout.split()
        assert len(slots) == 2
        for slot in slots:
            os.kill(int(slot), signal.SIGTERM)
    grid.send_signal(signal.SIGTERM)
    out, _ = grid.communicate(timeout=30)
    assert grid.returncode == 143 and "signal: stopping 2 runs" in out, out
    for pid in pids:
        assert (pid.parent / "state").read_text() == "saved\n"
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid.read_text()), 0)
    assert (tmp_path / "ex" / "machine.json").is_file()
