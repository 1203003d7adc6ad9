"""Files that could carry code or unbounded work (issue 34): a pickle payload planted in each file the
project reads back (a run folder's state.pt and rank files, a checkpoint, the word-vector cache) must be
refused in one line without running; a YAML alias bomb in a params file must be refused in under a second
with bounded memory. The payload creates a folder when unpickled with code allowed (tests/support.py's
Planted); a test checks the folder is not there."""
from __future__ import annotations

import time
import tracemalloc
from pathlib import Path
from typing import Callable

import pytest

from tests.faults.tools import alias_bomb, case, refused

G, CODE, BOMB = "bad input", "issue 34: code runs from a run folder", "issue 34: a YAML bomb"


def refused_without_running(load: Callable[[], object], path: Path, marker: Path, expect: str) -> str:
    """`load()` must raise a DecaError whose first line names `path` and says `expect`, and leave no `marker`."""
    from deca.errors import DecaError

    try:
        load()
    except DecaError as exc:
        head = str(exc).splitlines()[0]
        assert not marker.exists(), f"the payload ran (it created {marker.name}) before: {head}"
        assert head.startswith(f"{path}: ") and expect in head, \
            f"the refusal does not name the file or say {expect!r}: {head}"
        return head
    raise AssertionError(f"loaded{' and the payload ran' if marker.exists() else ''}")


@pytest.mark.parametrize("name", [
    case(G, "a pickle payload as a run folder's state.pt (deca train --resume)", CODE, "state.pt"),
    case(G, "a pickle payload as a run folder's rank0.pt (deca train --resume)", CODE, "rank0.pt"),
])
def test_a_planted_training_state_is_refused(tmp_path, observed, name):
    """A run folder's `name` holding a payload: train.state.load_training_state, what `deca train --resume` and
    `dvc repro`'s auto-resume load in each worker, refuses it."""
    import torch

    from tests.support import Planted
    from train.state import load_training_state

    run, marker = tmp_path / "checkpoint_000001", tmp_path / "ran"
    run.mkdir()
    torch.save({"iteration": 1, "world_size": 1}, run / "state.pt")
    torch.save({"iteration": 1}, run / "rank0.pt")
    torch.save({"iteration": 1, "x": Planted(marker)}, run / name)
    observed(refused_without_running(lambda: load_training_state(run, 0), run / name, marker, "would run code"))


@pytest.mark.fault(G, "a pickle payload inside a checkpoint (deca predict --checkpoint)", CODE)
def test_a_planted_checkpoint_is_refused(tmp_path, observed):
    import torch

    from tests.support import Planted

    bad, marker = tmp_path / "evil.pt", tmp_path / "ran"
    torch.save({"format": "deca-mqan/2", "x": Planted(marker)}, bad)
    line = refused(["predict", "--checkpoint", str(bad), "--device", "cpu", "--context", "a", "--question", "b"],
                   f"{bad}: not a checkpoint written by deca train; refused: it would run code")
    assert not marker.exists(), "the payload ran"
    observed(line)


@pytest.mark.fault(G, "a pickle payload in the word-vector cache (vectors.npy)", CODE)
def test_a_planted_vector_cache_is_refused(tmp_path, observed):
    """The word-vector cache (vectors.npy) replaced by an object array holding a payload: refused on opening."""
    import numpy as np

    from tests.support import Planted
    from mqan.vectors import MATRIX, convert_text, open_source

    text = tmp_path / "v.txt"
    text.write_text("a 1 1\nb 2 2\n", encoding="utf-8")
    folder, marker = convert_text(text, tmp_path / "cache"), tmp_path / "ran"
    np.save(folder / MATRIX, np.array([Planted(marker), 1], dtype=object), allow_pickle=True)
    observed(refused_without_running(lambda: open_source(str(folder)), folder / MATRIX, marker,
                                     "refused: it holds pickled objects"))


@pytest.mark.parametrize("kind", [
    case(G, "a YAML bomb of nested mappings, 9 levels x 9 (deca validate --params)", BOMB, "mapping"),
    case(G, "a YAML bomb of nested lists, 9 levels x 9 (deca validate --params)", BOMB, "list"),
])
def test_a_yaml_bomb_is_refused_in_a_second(tmp_path, observed, kind):
    """`deca validate --params BOMB` is one error line naming the file, in under a second and 50 MB."""
    bomb = tmp_path / "params.yaml"
    bomb.write_text(alias_bomb(kind), encoding="utf-8")
    tracemalloc.start()
    start = time.perf_counter()
    try:
        line = refused(["validate", "--params", str(bomb), "--dvc-yaml", "none"], f"{bomb}:", "refused: its aliases")
        seconds, peak = time.perf_counter() - start, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert seconds < 1 and peak < 50_000_000, f"refused, but after {seconds:.1f} s and {peak / 1e6:.0f} MB"
    observed(f"{line} ({seconds:.2f} s, {peak / 1e6:.1f} MB)")
