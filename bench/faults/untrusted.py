"""Files that could carry code or unbounded work (issue 34): a pickle payload planted in each file the
project reads back (a run folder's state.pt and rank files, a checkpoint, the word-vector cache) must be
refused in one line without running; a YAML alias bomb in a params file must be refused in under a second
with bounded memory. The payload creates a folder when unpickled with code allowed (bench/support.py); a
case checks the folder is not there."""
from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Callable

from bench.faults.case import Case, NotHandled, must
from bench.faults.tools import refused

CODE, BOMB = "issue 34: code runs from a run folder", "issue 34: a YAML bomb"


def refused_without_running(load: Callable[[], object], path: Path, marker: Path, expect: str) -> str:
    """`load()` must raise a DecaError whose first line names `path` and says `expect`, and leave no `marker`."""
    from deca.errors import DecaError

    try:
        load()
    except DecaError as exc:
        head = str(exc).splitlines()[0]
        must(not marker.exists(), f"the payload ran (it created {marker.name}) before: {head}")
        must(head.startswith(f"{path}: ") and expect in head, f"the refusal does not name the file or say "
                                                             f"{expect!r}: {head}")
        return head
    raise NotHandled(f"loaded{' and the payload ran' if marker.exists() else ''}")


def planted_state(name: str) -> Callable[[Path], str]:
    """A run folder's `name` (state.pt or rank0.pt) holding a payload: train.state.load_training_state, what
    `deca train --resume` and `dvc repro`'s auto-resume load in each worker, refuses it."""
    def check(tmp: Path) -> str:
        import torch

        from bench.support import Planted
        from train.state import load_training_state

        run, marker = tmp / "checkpoint_000001", tmp / "ran"
        run.mkdir()
        torch.save({"iteration": 1, "world_size": 1}, run / "state.pt")
        torch.save({"iteration": 1}, run / "rank0.pt")
        torch.save({"iteration": 1, "x": Planted(marker)}, run / name)
        return refused_without_running(lambda: load_training_state(run, 0), run / name, marker, "would run code")
    return check


def planted_checkpoint(tmp: Path) -> str:
    """`deca predict --checkpoint evil.pt` with a payload inside a checkpoint's dict: refused, not run."""
    import torch

    from bench.support import Planted

    bad, marker = tmp / "evil.pt", tmp / "ran"
    torch.save({"format": "deca-mqan/2", "x": Planted(marker)}, bad)
    line = refused(["predict", "--checkpoint", str(bad), "--device", "cpu", "--context", "a", "--question", "b"],
                   f"{bad}: not a checkpoint written by deca train; refused: it would run code")
    must(not marker.exists(), "the payload ran")
    return line


def planted_vector_cache(tmp: Path) -> str:
    """The word-vector cache (vectors.npy) replaced by an object array holding a payload: refused on opening."""
    import numpy as np

    from bench.support import Planted
    from mqan.vectors import MATRIX, convert_text, open_source

    text = tmp / "v.txt"
    text.write_text("a 1 1\nb 2 2\n", encoding="utf-8")
    folder, marker = convert_text(text, tmp / "cache"), tmp / "ran"
    np.save(folder / MATRIX, np.array([Planted(marker), 1], dtype=object), allow_pickle=True)
    return refused_without_running(lambda: open_source(str(folder)), folder / MATRIX, marker,
                                   "refused: it holds pickled objects")


def alias_bomb(kind: str, levels: int = 9, width: int = 9) -> str:
    """A params file whose aliases expand to width**levels values: nested mappings or nested lists."""
    if kind == "mapping":
        lines = [f"l0: &l0 {{{', '.join(f'k{i}: lol' for i in range(width))}}}"]
        lines += [f"l{n}: &l{n} {{{', '.join(f'k{i}: *l{n - 1}' for i in range(width))}}}" for n in range(1, levels)]
    else:
        lines = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
        lines += [f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * width)}]" for n in range(1, levels)]
    return "\n".join(lines) + "\n"


def bomb_refused(kind: str) -> Callable[[Path], str]:
    """`deca validate --params BOMB` is one error line naming the file, in under a second and 50 MB."""
    def check(tmp: Path) -> str:
        bomb = tmp / "params.yaml"
        bomb.write_text(alias_bomb(kind), encoding="utf-8")
        tracemalloc.start()
        start = time.perf_counter()
        try:
            line = refused(["validate", "--params", str(bomb), "--dvc-yaml", "none"], f"{bomb}:",
                           "refused: its aliases")
            seconds, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        must(seconds < 1 and peak < 50_000_000, f"refused, but after {seconds:.1f} s and {peak / 1e6:.0f} MB")
        return f"{line} ({seconds:.2f} s, {peak / 1e6:.1f} MB)"
    return check


def cases() -> list[Case]:
    """Planted payloads and alias bombs."""
    g = "bad input"
    return [
        Case(g, "a pickle payload as a run folder's state.pt (deca train --resume)", CODE, planted_state("state.pt")),
        Case(g, "a pickle payload as a run folder's rank0.pt (deca train --resume)", CODE, planted_state("rank0.pt")),
        Case(g, "a pickle payload inside a checkpoint (deca predict --checkpoint)", CODE, planted_checkpoint),
        Case(g, "a pickle payload in the word-vector cache (vectors.npy)", CODE, planted_vector_cache),
        Case(g, "a YAML bomb of nested mappings, 9 levels x 9 (deca validate --params)", BOMB,
             bomb_refused("mapping")),
        Case(g, "a YAML bomb of nested lists, 9 levels x 9 (deca validate --params)", BOMB, bomb_refused("list")),
    ]
