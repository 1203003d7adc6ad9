"""The bundled mirror holds every raw file of every task's splits, each listed (and matching) in SHA256SUMS."""
import hashlib

import pytest

from deca.registry import get_task, resolve_tasks
from tests.conftest import FIXTURE_CORPORA

TASKS = resolve_tasks("all")


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
            assert path.exists(), f"{name} {split}: {rel} missing from the bundled mirror"
            for file in sorted(path.rglob("*")) if path.is_dir() else [path]:
                if file.is_file():
                    key = file.relative_to(FIXTURE_CORPORA).as_posix()
                    assert manifest.get(key) == hashlib.sha256(file.read_bytes()).hexdigest(), f"SHA256SUMS entry of {key}"


def test_manifest_lists_exactly_the_fixture_files():
    files = {p.relative_to(FIXTURE_CORPORA).as_posix() for p in FIXTURE_CORPORA.rglob("*")
             if p.is_file() and p.name != "SHA256SUMS"}
    assert set(_manifest()) == files
