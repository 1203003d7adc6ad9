"""The resumable training state (train/state.py) pickles no project class, so a state written before code
moves (train/ -> train/mqan, ...) keeps loading."""
from __future__ import annotations

import pickletools
import zipfile

import torch

from tests.train.test_recipe import params  # noqa: F401  (the recipe's fixture)
from train.recipe import local_recipe
from train.state import load_training_state

PROJECT = ("deca", "pipelines", "train", "eval", "infra", "tests")


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


def test_saved_state_holds_no_project_class_and_loads_back(params, tmp_path):  # noqa: F811
    torch.set_num_threads(1)
    recipe = local_recipe(params)
    recipe.train_step()
    recipe.save_state(tmp_path)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["rank0.pt", "state.pt"]
    for name in files:
        modules = pickled_modules(tmp_path / name)
        assert modules and not {m for m in modules if m.split(".")[0] in PROJECT}, modules
    state, mine = load_training_state(tmp_path, 0)
    assert state["iteration"] == 1 and set(mine) == {"data", "rng"}
