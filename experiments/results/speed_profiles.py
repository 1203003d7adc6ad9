"""The operator profiles of a CPU training step beside docs/results/speed.md (bench.cpu_profile's text files under
docs/results/profiles/intel_xeon/): an SST-shaped step's matrix products and copies in bf16 against fp32, and
dropout's share."""
from __future__ import annotations

import re
from pathlib import Path

from experiments.results import records, speedcheck

PROFILES = records.RESULTS / "profiles" / "intel_xeon"  # bench.cpu_profile, fp32/ and bf16/ (Intel Xeon with AMX)
MATMUL = ("aten::mm", "aten::addmm", "aten::bmm")


def ms(value: str, unit: str) -> float:
    """A profiler's time in milliseconds."""
    return float(value) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]


def profile(path: Path) -> dict:
    """A bench.cpu_profile text: its header lines (command, commit, date, cpu, load) and per training step's task
    the operators' self CPU (share %, ms) and the step's self CPU total (ms)."""
    head, steps, task = {}, {}, None
    for line in path.read_text(encoding="utf-8").splitlines():
        if task is None and not line.startswith("##") and ": " in line:
            key, value = line.split(": ", 1)
            head[key] = value
        if m := re.match(r"## training step, (\w+):", line):
            task = m.group(1)
            steps[task] = {"ops": {}, "total": None}
        elif task and (m := re.match(r"\s*(aten::\S+)\s+([\d.]+)%\s+([\d.]+)(us|ms|s)\s", line)):
            steps[task]["ops"][m.group(1)] = (float(m.group(2)), ms(m.group(3), m.group(4)))
        elif task and (m := re.match(r"Self CPU time total: ([\d.]+)(us|ms|s)", line)):
            steps[task]["total"] = ms(m.group(1), m.group(2))
    return {"head": head, "steps": steps, "path": path}


def profile_said(found: dict) -> str:
    """'at commit e0ec75b, 1-minute load 1.26-1.46': where a profile was taken."""
    loads = [float(x) for x in re.findall(r"\[([\d.]+),", found["head"].get("load before", ""))]
    return f"commit {found['head']['commit']}" + (f", 1-minute load {min(loads):.2f}-{max(loads):.2f}" if loads else "")


def bf16_profile(sessions: list[speedcheck.Session], fp32: dict, bf16: dict) -> str:
    """An SST-shaped training step's matrix products and copies, bf16 against fp32, from the two profiles."""
    a, b = fp32["steps"]["sst"], bf16["steps"]["sst"]
    commit = fp32["head"]["commit"]
    code = next((f"the model code of {s.name}" for s in sessions if s.meta["commit"] == commit), "no session's code")
    each = ", ".join(f"{op.split('::')[1]} {a['ops'][op][1]:.1f} -> {b['ops'][op][1]:.1f}" for op in MATMUL)
    cpu = fp32["head"]["cpu"].split(",")[0]
    return (f"Profiled on the {cpu} ([profiles/intel_xeon/](profiles/intel_xeon/), fp32 and `--precision bf16`, one "
            f"run each; fp32 at {profile_said(fp32)}, bf16 at {profile_said(bf16)}: {code}), an SST-shaped training "
            f"step's matrix products took {sum(b['ops'][op][1] for op in MATMUL):.1f} ms of self CPU in bf16 "
            f"against {sum(a['ops'][op][1] for op in MATMUL):.1f} ms in fp32 (ms, fp32 -> bf16: {each}), its "
            f"copies (`copy_`, the casts among them) {b['ops']['aten::copy_'][1]:.1f} ms against "
            f"{a['ops']['aten::copy_'][1]:.1f}, and the whole step {b['total'] / 1e3:.3f} s against "
            f"{a['total'] / 1e3:.3f} s")


def dropout_share(fp32: dict) -> str:
    """The share of `bernoulli_` (dropout's mask) in the fp32 profile's SST and SQuAD training steps."""
    sst, squad = (fp32["steps"][t]["ops"]["aten::bernoulli_"][0] for t in ("sst", "squad"))
    return (f"took {sst:.1f}% of an SST-shaped training step's self CPU time and {squad:.1f}% of a SQuAD-shaped "
            f"one's on the {fp32['head']['cpu'].split(',')[0]} (one run at {profile_said(fp32)})")
