"""bench/batch_invariance.py on the tiny trained model of the serve tests: every row decoded alone and in
batches, its record per row; on these fixtures no answer depends on its batch, and its numbers only in
the last digits."""
from __future__ import annotations

import json

from bench import batch_invariance
from tests.infer.serve.conftest import checkpoint  # noqa: F401  (the trained miniature model)


def test_answers_do_not_depend_on_the_batch_and_the_record_says_so_per_row(checkpoint, mini_data,  # noqa: F811
                                                                          tmp_path, capsys):
    processed, _, _ = mini_data
    out = tmp_path / "record.json"
    assert batch_invariance.main(["--checkpoint", str(checkpoint), "--processed", str(processed),
                                  "--tasks", "sst,woz.en", "--rows", "6", "--sizes", "1,5", "--threads", "1,2",
                                  "--record", str(out)]) == 0
    found = json.loads(out.read_text())
    assert found["settings"]["sizes"] == [1, 5] and found["commit"] and found["machine"]
    cases = {(c["threads"], c["batch_size"]): c["rows"] for c in found["cases"]}
    assert set(cases) == {(1, 1), (1, 5), (2, 1), (2, 5)}
    n = len(cases[1, 1])
    assert {r["task"] for r in cases[1, 1]} == {"sst", "woz.en"} and n > 2
    for rows in cases.values():
        assert [(r["id"], r["task"]) for r in rows] == [(r["id"], r["task"]) for r in cases[1, 1]]
        assert all(r["same_answer"] for r in rows)  # the answer text never depends on the batch here
        assert all(0.0 <= r["probability"] < 1e-4 and 0.0 <= r["weights"] < 1e-4 for r in rows)
    assert all(r["probability"] == 0.0 == r["weights"] for r in cases[1, 1])  # the reference computation again
    assert f"threads 2 batch 5: 0 of {n} answers changed" in capsys.readouterr().out
    sizes = {(c["threads"], c["batch_size"]): c["batches"] for c in found["cases"]}
    assert sizes[1, 5] == [5] * (n // 5) + ([n % 5] if n % 5 else []) and sizes[1, 1] == [1] * n
