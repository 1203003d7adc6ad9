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


def test_a_resumed_run_starts_at_the_iteration_it_continues_from():
    p = ProgressBar(None, total=160, stream=io.StringIO(), start=100)
    assert p.line(elapsed=20.0).startswith("train: iteration 100/160, 0.3 min, resuming from 100")  # not 0/160
    p.update([{"iteration": 110, "loss": 1.5}])
    # the time left comes from the 10 iterations this process did in a minute, not from 110 in a minute
    assert p.line(elapsed=60.0).startswith("train: iteration 110/160, 1.0 min, ~5.0 min left")


def test_resumed_iteration_is_the_latest_registered_checkpoints(tmp_path):
    import json

    from train.progress import resumed_iteration

    assert resumed_iteration(tmp_path) == 0  # a fresh run: no snapshot
    results = [{"checkpoint_dir_name": f"checkpoint_{i:08d}", "metrics": {"iteration": i, "loss": 1.0}} for i in (50, 100)]
    (tmp_path / "checkpoint_manager_snapshot.json").write_text(json.dumps(
        {"checkpoint_results": results, "latest_checkpoint_result": results[-1]}))
    assert resumed_iteration(tmp_path) == 100
    (tmp_path / "checkpoint_manager_snapshot.json").write_text("{truncated")
    assert resumed_iteration(tmp_path) == 0
