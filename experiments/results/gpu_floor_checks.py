"""What docs/results/gpu_floor/'s profiles and test logs say, for gpu_floor.md (experiments/results/gpu_floor.py):
the profile tables' rows (bench/gpu_profile.py), the steps measured twice, the synchronisations per step, and each
run's tally of the GPU tests (tests.txt)."""
from __future__ import annotations

import re
from pathlib import Path

PROFILE_COLUMNS = ("configuration", "phase", "ms/step", "kernels", "launches", "syncs", "busy ms", "floor ms", "same ids")
FP32 = ("fp32", "fp32+graphs")  # profile configurations whose training step is the same (graphs switch decoding)
TASKS = {"squad": "SQuAD", "sst": "SST"}
TALLY = re.compile(r"^=*\s*(\d+ (?:failed|passed|error|errors)\b.*?) in [\d.]+s\b")


def profile_rows(run: Path) -> list[dict[str, str]]:
    """The rows of a run's profile tables (bench/gpu_profile.py's, in profile*.txt), as dicts."""
    rows = []
    for path in sorted(run.glob("profile*.txt")):
        for line in path.read_text(encoding="utf-8").splitlines():
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| ") and len(cells) == len(PROFILE_COLUMNS) and cells[0] != "configuration":
                rows.append(dict(zip(PROFILE_COLUMNS, cells)))
    return rows


def profile_table(rows: list[dict[str, str]]) -> list[str]:
    lines = [f"| {' | '.join(PROFILE_COLUMNS)} |", "|" + "---|" * len(PROFILE_COLUMNS)]
    return lines + [f"| {' | '.join(r[c] for c in PROFILE_COLUMNS)} |" for r in rows]


def find_all(rows: list[dict[str, str]], configs: tuple[str, ...], phase_start: str,
             column: str = "ms/step") -> list[float]:
    """`column` of every row of `configs` whose phase starts with `phase_start` (no exact-lengths row)."""
    return [float(r[column]) for r in rows
            if r["configuration"] in configs and r["phase"].startswith(phase_start) and "exact" not in r["phase"]]


def find(rows: list[dict[str, str]], config: str, phase_start: str, column: str = "ms/step") -> float | None:
    """`column` of the first row of `config` whose phase starts with `phase_start` (not an exact-lengths row)."""
    found = find_all(rows, (config,), phase_start, column)
    return found[0] if found else None


def latest(runs: dict[str, Path], measure) -> tuple[str | None, list[float]]:
    """The last run (in name order) for which `measure(run)` gives values, and those values."""
    for name in reversed(list(runs)):
        values = measure(runs[name])
        if values:
            return name, values
    return None, []


def step_shape(row: dict[str, str]) -> tuple[str, str, str]:
    """A training row's task, examples ('50' from '(50 ex)'; '' where the phase gives none) and kernels: rows of
    one shape measured the same step."""
    phase = row["phase"].removeprefix("train step, ")
    return phase.split(" (")[0], phase.partition("(")[2].partition(" ex)")[0], row["kernels"]


def batches(rows: list[dict[str, str]]) -> dict[tuple[str, str, str], list[float]]:
    """Training rows' ms/step grouped by step_shape: the rows of one group measured the same step."""
    shapes: dict[tuple[str, str, str], list[float]] = {}
    for row in rows:
        shapes.setdefault(step_shape(row), []).append(float(row["ms/step"]))
    return shapes


def batch_label(shape: tuple[str, str, str]) -> str:
    """'50 examples, 3,527 kernels' (the examples left out where the phase gives none)."""
    _, ex, kernels = shape
    return (f"{ex} examples, " if ex else "") + f"{int(kernels):,} kernels"


def train_rows(rows: list[dict[str, str]], configs: tuple[str, ...] = FP32) -> list[dict[str, str]]:
    """The training-step rows of `configs` (no exact-lengths row)."""
    return [x for x in rows if x["configuration"] in configs and x["phase"].startswith("train step")
            and "exact" not in x["phase"]]


def repeat_note(runs: dict[str, Path]) -> str:
    """In the latest run that profiled training twice: the same step (task, examples, kernels) measured in two
    processes, and steps of one task but another batch, which are not a repeat."""
    name, rows = latest(runs, lambda r: (lambda v: v if len({x["configuration"] for x in v}) > 1 else [])(
        train_rows(profile_rows(r))))
    if not rows:
        return ""
    shapes = batches(rows)
    said = []
    for (task, ex, kernels), ms in shapes.items():
        if len(ms) > 1:
            said.append(f"the same {TASKS.get(task, task)} step ({ex} examples, {int(kernels):,} kernels) measured "
                        f"in {'two' if len(ms) == 2 else len(ms)} processes gave {min(ms):.1f} "
                        f"{'and' if len(ms) == 2 else 'to'} {max(ms):.1f} ms (x{max(ms) / min(ms):.2f})")
    for task in dict.fromkeys(t for t, _, _ in shapes):
        other = [(k, v) for k, v in shapes.items() if k[0] == task]
        if len(other) > 1:
            said.append(f"two {TASKS.get(task, task)} batches of different shape (" + "; ".join(
                f"{batch_label(k)}: {'/'.join(f'{m:.1f}' for m in ms)} ms" for k, ms in other)
                + ") are not a repeat of one step")
    if not said:
        return ""
    return (f"The profile's step times are each one process's median over its steps. In {name}, "
            + "; ".join(said) + ".")


def graphs_training_note(profiles: dict[str, list[dict[str, str]]]) -> str:
    """What `+graphs` training rows measure: fp32's step again where the batch (examples, kernels) is the same,
    run by run and task by task; another step where it is not."""
    said = []
    for name, rows in profiles.items():
        graphs = {step_shape(r)[0]: step_shape(r) for r in train_rows(rows, ("fp32+graphs",))}
        plain = {step_shape(r)[0]: step_shape(r) for r in train_rows(rows, ("fp32",))}
        for task in (t for t in graphs if t in plain):
            label = TASKS.get(task, task)
            said.append(f"{name}'s {label} rows are one batch ({batch_label(plain[task])}), a repeat"
                        if graphs[task] == plain[task] else
                        f"{name}'s {label} rows are two batches ({batch_label(plain[task])} against "
                        f"{batch_label(graphs[task])}), not a repeat")
    head = "`+graphs` changes greedy decoding only: its training-step rows measure fp32's step again only where "
    return head + "the batch is the same" + (f": {'; '.join(said)}." if said else "; no run profiled both.")


def unpacking_note(profiles: dict[str, list[dict[str, str]]]) -> str:
    """What unpacking the encoder's BiLSTMs (run2) did to a SQuAD-shaped fp32 step: the kernel count, which the
    later runs repeat, and the time, which one profile each does not settle."""
    first, second = profiles["run1"], profiles["run2"]
    k1, k2 = (find(p, "fp32", "train step, squad", "kernels") for p in (first, second))
    s1, s2 = find(first, "fp32", "train step, squad"), find(second, "fp32", "train step, squad")
    names = list(profiles)
    later = {n: profiles[n] for n in names[names.index("run2") + 1:]
             if find_all(profiles[n], FP32, "train step, squad")}
    kernels = [k for p in later.values() for k in find_all(p, FP32, "train step, squad", "kernels")]
    ms = [m for p in later.values() for m in find_all(p, FP32, "train step, squad")]
    who = ", ".join(later)
    return ("running the encoder's BiLSTMs unpacked, each direction on its own (the backward one on each row "
            f"reversed in place) cut a SQuAD-shaped fp32 training step's kernels from {k1:,.0f} (run1) to {k2:,.0f} "
            "(run2)" + (f"; {who} counted {min(kernels):,.0f}-{max(kernels):,.0f}" if kernels else "")
            + f". Its time went from {s1:.1f} ms (run1) to {s2:.1f} ms (run2), one profile process each"
            + (f"; {who} measured {min(ms):.1f}-{max(ms):.1f} ms for SQuAD steps, so these profiles do "
               "not settle how much time the change saved" if ms else ""))


def syncs_note(profiles: dict[str, list[dict[str, str]]]) -> str:
    """The host synchronisations per training step and per greedy decoding, over every run's profile rows."""
    rows = [r for p in profiles.values() for r in p]
    train = [float(r["syncs"]) for r in rows if r["phase"].startswith("train step")]
    greedy = [float(r["syncs"]) for r in rows if r["phase"].startswith("greedy")]
    return (f"Synchronisations, over every profile row: {min(train):.1f}-{max(train):.1f} per training step (each "
            "row an average over its profile process's steps; no record breaks them down by cause), and "
            f"{min(greedy):.1f}-{max(greedy):.1f} per "
            "greedy decoding (among them the check for the end every 8 steps, the candidates' `unique` once per "
            "batch and the final copy of the ids; no record breaks the count down by cause).")


def said_list(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}" if names else ""


def greedy_steps(row: dict[str, str]) -> int:
    """A greedy row's decoding steps: 50 from 'greedy 256x50, sst'."""
    return int(row["phase"].split(",")[0].split("x")[-1])


def kernels_per_step(profiles: dict[str, list[dict[str, str]]]) -> tuple[float, float]:
    """The lowest and highest kernels per decoding step over every run's greedy rows (kernels over the steps)."""
    found = [int(r["kernels"]) / greedy_steps(r) for p in profiles.values() for r in p
             if r["phase"].startswith("greedy")]
    return min(found), max(found)


def graph_pairs(profiles: dict[str, list[dict[str, str]]]) -> dict[str, list[tuple[str, float, float, bool]]]:
    """Task -> every run's fp32 against fp32+graphs greedy decoding: (run, fp32 ms, graphs ms, both rows' ids
    checked the same)."""
    found: dict[str, list[tuple[str, float, float, bool]]] = {}
    for name, rows in profiles.items():
        for task in TASKS:
            pair = [next((r for r in rows if r["configuration"] == c and r["phase"].startswith("greedy")
                          and r["phase"].endswith(f", {task}")), None) for c in FP32]
            if None not in pair:
                found.setdefault(task, []).append((name, float(pair[0]["ms/step"]), float(pair[1]["ms/step"]),
                                                   all(r["same ids"] == "yes" for r in pair)))
    return found


def graphs_note(profiles: dict[str, list[dict[str, str]]]) -> str:
    """Every run's CUDA-graph greedy decoding against fp32's, task by task: the range of the speed-ups and each
    pair, and in which runs the ids were checked the same."""
    said = []
    for task, pairs in graph_pairs(profiles).items():
        gains = [a / b for _, a, b, _ in pairs]
        each = ", ".join(f"{n} {a:.1f} -> {b:.1f} ms" for n, a, b, _ in pairs)
        low, high = f"{min(gains):.1f}", f"{max(gains):.1f}"
        said.append(f"{TASKS[task]} x{low if low == high else f'{low}-{high}'} ({each})")
    if not said:
        return ""
    pairs = [p for ps in graph_pairs(profiles).values() for p in ps]
    checked = sorted({n for n, *_, same in pairs if same})
    unchecked = sorted({n for n, *_, same in pairs if not same})
    ids = (f"the same ids in {said_list(checked) or 'none'}"
           + (f", not checked in {said_list(unchecked)}" if unchecked else ""))
    return ("capturing a greedy decoding step as a CUDA graph sped up 256 x 50 decoding, fp32 against fp32+graphs in "
            f"one profile process each: {'; '.join(said)}; {ids}")


def tests_tally(run: Path) -> tuple[str, list[str]] | None:
    """A run's pytest tally ('4 failed, 36 passed'; warnings left out) and its failed tests' names, from its
    tests.txt; None where the run has none."""
    path = run / "tests.txt"
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [m.group(1) for line in lines if (m := TALLY.match(line))]
    tally = ", ".join(p for p in found[-1].split(", ") if "warning" not in p) if found else "no pytest tally"
    failed = [line.split("::", 1)[-1].split(" - ")[0] for line in lines if line.startswith(("FAILED ", "ERROR "))]
    return tally, failed


def grouped(names: list[str]) -> str:
    """Test ids with their parameters grouped: 'test_x[a, b]'."""
    by_test: dict[str, list[str]] = {}
    for name in names:
        test, _, param = name.partition("[")
        by_test.setdefault(test, []).append(param.rstrip("]"))
    return ", ".join(f"{t}[{', '.join(p for p in ps if p)}]" if any(ps) else t for t, ps in by_test.items())


def tests_note(runs: dict[str, Path], graph_runs: set[str]) -> str:
    """Each run's GPU tests as its tests.txt tallies them, what failed, and which CUDA-graph figures come from
    code whose graph tests failed (`graph_runs`: the runs with such figures)."""
    said, caveats = [], []
    for name, run in runs.items():
        found = tests_tally(run)
        if found is None:
            said.append(f"{name} none (no tests.txt)")
            continue
        tally, failed = found
        said.append(f"{name} {tally}" + (f" (failed: {grouped(failed)})" if failed else ""))
        if name in graph_runs and any("cuda_graph" in f for f in failed):
            caveats.append(name)
    text = ("The GPU tests (no synchronisation in a step under `torch.cuda.set_sync_debug_mode`, graph replay equal "
            "to eager decoding in fp32 and bf16, packing exact), as each run's tests.txt tallies them: "
            + "; ".join(said) + ".")
    if caveats:
        text += (f" The CUDA-graph figures of {', '.join(caveats)} (its `+graphs` profile rows and graph "
                 "side-by-side rows) come from code whose graph-replay tests failed in that run.")
    return text
