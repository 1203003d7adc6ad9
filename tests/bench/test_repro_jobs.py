"""bench/repro_jobs.py: the ratio of a round is serial / parallel, summarised by its median and range; the
settings that would measure nothing are refused before any clone is made."""
from __future__ import annotations

import pytest

from bench import repro_jobs


def test_the_summary_is_the_median_and_range_of_serial_over_parallel():
    rounds = [{"serial": {"seconds": s}, "parallel": {"seconds": p}} for s, p in ((300, 200), (280, 200), (330, 200))]
    assert repro_jobs.summary(rounds) == {"ratios": [1.5, 1.4, 1.65], "median": 1.5, "min": 1.4, "max": 1.65}


@pytest.mark.parametrize("argv", [["--jobs", "1"], ["--rounds", "0"]])
def test_settings_that_measure_nothing_are_refused(argv, tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        repro_jobs.main([*argv, "--work", str(tmp_path)])
    assert stop.value.code == 2 and "--jobs 1 is the serial side" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
