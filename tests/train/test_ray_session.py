"""train/ray_session.py, the driver process's side of Ray: Ray Train's fit in a helper thread, which a Ctrl-C
ends at the next training step in local mode. Starting Ray and its watchdog, and the cluster's room, need a Ray
instance: tests/infra/test_processes.py and tests/train/test_training_ray.py (slow)."""
from __future__ import annotations

import time

import pytest


def test_ctrl_c_waits_for_the_training_step_however_long_it_takes(capsys):
    """A loaded machine can take longer than any fixed wait to reach the next step: the driver waits for the
    training thread to end (a process that exits while it runs inside torch aborts with -6)."""
    import threading

    from train.ray_session import fit_in_thread

    stopped = threading.Event()

    class SlowStep:  # a trainer whose step ends 1.5 s after the stop is asked for
        def fit(self):
            stop.wait()
            time.sleep(1.5)
            stopped.set()
            raise KeyboardInterrupt

    stop = threading.Event()
    timer = threading.Timer(0.3, lambda: __import__("_thread").interrupt_main())
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        fit_in_thread(SlowStep(), stop)
    assert stopped.is_set()  # the thread ended before the driver went on
    assert "stopping at the end of this step" in capsys.readouterr().err
