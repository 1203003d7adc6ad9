"""The bundled mirror holds every raw file of these tasks' splits, each listed in SHA256SUMS."""
import hashlib

import pytest

from deca.registry import get_task, resolve_tasks
from tests.conftest import FIXTURE_CORPORA

TASKS = ["squad", "srl", "schema", "zre", "amazon", "yelp", "imdb_uci"] + resolve_tasks("mrqa.*")


def _manifest() -> dict[str, str]:
    out = {}
    for line in (FIXTURE_CORPORA / "SHA256SUMS").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, _, rel = line.partition("  ")
            out[rel] = digest
    return out


@pytest.mark.parametrize("name", TASKS)
def test_split_files_are_in_the_mirror_with_checksums(name):
    manifest = _manifest()
    task = get_task(name)
    for split, files in task.splits.items():
        for rel in files:
            path = FIXTURE_CORPORA / rel
            assert path.is_file(), f"{name} {split}: {rel} missing from the bundled mirror"
            assert manifest.get(rel) == hashlib.sha256(path.read_bytes()).hexdigest(), f"SHA256SUMS entry of {rel}"
