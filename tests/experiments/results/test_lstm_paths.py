"""experiments/results/lstm_paths.py: the profile pages say what each ratio is, and the committed ones are what
`make results` renders from their records."""
from __future__ import annotations

from bench import record
from experiments.results import lstm_paths, pages
from mqan import unpacked


def test_the_page_gives_the_command_the_load_the_wait_policy_and_the_rule():
    row = {"shape": "s", "batch": 2, "width": 9, "d_in": 4, "segments": 2, "mode": "train", "packed": 2.0,
           "directions": 0.5, "staircase": 1.0}
    settings = {"repeats": 3, "threads": 2, "clock": "wall", "OMP_WAIT_POLICY": None}
    found = {**record.begin("bench.lstm_paths", []), "load_after": [1.0, 1.0, 1.0], "settings": settings, "rows": [row]}
    text = lstm_paths.page(found, "x.json")
    assert "python -m bench.lstm_paths" in text and "Load average" in text and f"padded to {unpacked.LONG}" in text
    assert "from [x.json](x.json)" in text and "OMP_WAIT_POLICY=unset" in text and "bf16 units" in text
    assert "| s | 2 x 9, 4 | 2 | train | 2.0000 | 0.5000 (4.0) | 1.0000 (2.0) |" in text
    assert f"`directions` x4.0 below {unpacked.LONG} (1 row)" in text


def test_the_committed_profile_pages_are_what_make_results_renders_from_their_records():
    for name, wait in (("lstm_paths", "PASSIVE"), ("lstm_paths_intel_xeon", "unset")):
        page = f"docs/results/profiles/{name}.md"
        assert page in pages.GENERATED
        committed = (record.ROOT / page).read_text(encoding="utf-8")
        assert committed == pages.render(page) == lstm_paths.render_page(page)
        assert f"OMP_WAIT_POLICY={wait}" in committed and "by hand" not in committed
