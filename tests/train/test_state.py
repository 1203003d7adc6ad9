"""The resumable training state (train/state.py) pickles no project class, so a state written before code
moves (train/ -> mqan, ...) keeps loading."""
from __future__ import annotations

import pickletools
import zipfile

import numpy as np
import pytest
import torch

from tests.support import Planted
from deca.errors import DataError
from deca.layout import PACKAGES

from tests.train.test_recipe import params  # noqa: F401  (the recipe's fixture)
from train.recipe import local_recipe
from train.state import load_training_state

PROJECT = (*PACKAGES, "tests")


def pickled_modules(path) -> set[str]:
    """The modules whose globals a torch file's pickle refers to (what unpickling would import)."""
    with zipfile.ZipFile(path) as archive:
        data = archive.read(next(n for n in archive.namelist() if n.endswith("data.pkl")))
    modules, strings = set(), []
    for op, arg, _ in pickletools.genops(data):
        if op.name in ("SHORT_BINUNICODE", "BINUNICODE", "UNICODE"):
            strings.append(arg)
        elif op.name == "STACK_GLOBAL":
            modules.add(strings[-2])
        elif op.name == "GLOBAL":
            modules.add(arg.split(" ")[0])
    return modules


def project_classes(path) -> set[str]:
    """The project's modules whose classes a torch file pickles (none may be: a state must load after code moves)."""
    return {m for m in pickled_modules(path) if m.split(".")[0] in PROJECT}


def test_the_guard_sees_a_pickled_model_class(tmp_path):
    """A state holding an object of any package (here mqan's Vocab) fails the guard."""
    from mqan.vocab import Vocab

    torch.save({"vocab": Vocab.from_tokens(["a", "b"], max_generative=10)}, tmp_path / "state.pt")
    assert project_classes(tmp_path / "state.pt") == {"mqan.vocab"}


def test_saved_state_holds_no_project_class_and_loads_back(params, tmp_path):  # noqa: F811
    torch.set_num_threads(1)
    recipe = local_recipe(params)
    recipe.train_step()
    recipe.save_state(tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["rank0.pt", "state.pt"]
    for name in files:
        assert pickled_modules(tmp_path / name) and not project_classes(tmp_path / name)
    state, mine = load_training_state(tmp_path, 0)
    assert state["iteration"] == 1 and set(mine) == {"data", "rng"}


def test_new_state_pickles_no_numpy(params, tmp_path):  # noqa: F811
    torch.set_num_threads(1)
    local_recipe(params).save_state(tmp_path)
    assert not any(m.startswith("numpy") for m in pickled_modules(tmp_path / "rank0.pt"))


def test_a_state_written_by_the_previous_writer_still_resumes(params, tmp_path):  # noqa: F811
    """rank0.pt as the writer before this change wrote it: NumPy's RNG state as NumPy's own tuple."""
    torch.set_num_threads(1)
    recipe = local_recipe(params)
    recipe.train_step()
    recipe.save_state(tmp_path)
    mine = torch.load(tmp_path / "rank0.pt", weights_only=True)
    np.random.seed(7)
    legacy = np.random.get_state()
    mine["rng"]["numpy"] = legacy
    torch.save(mine, tmp_path / "rank0.pt")
    assert any(m.startswith("numpy") for m in pickled_modules(tmp_path / "rank0.pt"))
    np.random.seed(1)
    resumed = local_recipe(params)
    resumed.load_state(tmp_path)
    assert resumed.iteration == 1
    assert np.random.get_state()[1].tolist() == legacy[1].tolist()


@pytest.mark.parametrize("name", ["state.pt", "rank0.pt"])
def test_a_planted_payload_is_refused_in_one_line_and_never_runs(params, tmp_path, name):  # noqa: F811
    torch.set_num_threads(1)
    local_recipe(params).save_state(tmp_path)
    marker = tmp_path / "ran"
    torch.save({"iteration": 1, "x": Planted(marker)}, tmp_path / name)
    with pytest.raises(DataError) as info:
        load_training_state(tmp_path, 0)
    assert not marker.exists()
    head = str(info.value).splitlines()[0]
    assert head.startswith(f"{tmp_path / name}: ") and "would run code (posix.mkdir)" in head
    assert "fix:" in str(info.value)


def test_a_truncated_state_is_named(tmp_path):
    (tmp_path / "state.pt").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(DataError, match=r"state\.pt: not a training state written by deca train; cannot load"):
        load_training_state(tmp_path, 0)
