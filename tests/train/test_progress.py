"""Progress of a training run when there is no terminal (a DVC stage, CI): plain periodic lines."""
import io

from train.progress import ProgressBar


def test_lines_say_iteration_time_left_and_loss():
    p = ProgressBar(None, total=200, stream=io.StringIO())
    assert not p.bar  # not a terminal: lines, not a bar
    p.update([{"iteration": 50, "phase": "round_robin", "loss": 2.5}, {"tokens_per_s": 1234.4}])
    line = p.line(elapsed=60.0)
    assert line.startswith("train: iteration 50/200, 1.0 min, ~3.0 min left")
    assert "loss=2.500" in line and "tok/s=1234" in line and "phase=round_robin" in line
    p.update([{"event": "validating"}])
    assert "event=validating" in p.line(61.0)
    p.update([{"loss": 2.0}])
    assert "event" not in p.line(62.0)


def test_a_time_bounded_run_shows_the_time_left_not_a_placeholder_eta():
    p = ProgressBar(None, total=100_000, max_minutes=30, stream=io.StringIO())
    p.update([{"iteration": 700}])
    line = p.line(elapsed=12 * 60)
    assert "iteration 700," in line and "18.0 min left of 30" in line and "100000" not in line
