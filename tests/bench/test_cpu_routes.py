"""bench/cpu_routes.py: both sides warmed once, then timed alternately; the ratio is PyTorch's time over the route's."""
from bench import cpu_routes


def test_compare_warms_both_then_alternates_and_divides_pytorch_by_route(monkeypatch):
    calls = []
    fake_times = iter([0.004, 0.002] * 3)
    monkeypatch.setattr(cpu_routes, "timed", lambda fn: fn() or next(fake_times))
    found = cpu_routes.compare(lambda: calls.append("pytorch"), lambda: calls.append("route"), repeats=3)
    assert calls == ["pytorch", "route"] * 4  # one untimed call of each, then 3 timed pairs
    assert found == {"pytorch": 4.0, "route": 2.0, "ratio": 2.0}
