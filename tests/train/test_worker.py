"""train/worker.py outside Ray: what a worker raises when Ray Train's copy of a checkpoint fails."""
from __future__ import annotations

import errno
import pickle

import pytest

from deca.errors import WriteError


def test_a_full_disk_while_ray_copies_a_checkpoint_names_the_checkpoint_folder(tmp_path, monkeypatch):
    """Ray's copy (pyarrow) fails with an OSError naming no file; the worker's error crosses to the driver
    pickled, so it must say where itself."""
    import ray.train

    from train.worker import report_to_ray

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "Error writing bytes to file. Detail: [errno 28] No space left on device")

    monkeypatch.setattr(ray.train, "report", full_disk)
    run_dir = tmp_path / "checkpoints" / "r"
    with pytest.raises(WriteError) as err:
        report_to_ray({"iteration": 4}, tmp_path, 4, run_dir=run_dir)
    crossed = pickle.loads(pickle.dumps(err.value))
    assert crossed.errno == errno.ENOSPC
    assert str(crossed).splitlines() == [f"{run_dir / 'checkpoint_00000004'}: No space left on device",
                                         f"  fix: free space on the disk that holds {run_dir.parent} (or write the "
                                         "output elsewhere), then run it again"]
