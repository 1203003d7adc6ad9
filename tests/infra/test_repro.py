"""infra/repro.py: `make run` shows one line per stage and keeps dvc's own output in a log."""
from __future__ import annotations

import io
import stat

from infra.repro import Reporter, run

DVC_OUTPUT = """Stage 'download@sst' didn't change, skipping
Running stage 'prepare@sst':
> deca prepare --tasks sst
WARNING apache_beam: a thousand lines of this
Updating lock file 'dvc.lock'
Running stage 'train':
> deca train
train: iteration 26/200, 0.5 min, ~3.4 min left; loss=4.3
train: iteration 200/200, 3.1 min
"""


def test_one_line_per_stage_and_the_training_progress():
    out = io.StringIO()
    reporter = Reporter(total=3, out=out)
    for line in DVC_OUTPUT.splitlines():
        reporter.line(line)
    reporter.finish()
    lines = out.getvalue().splitlines()
    assert lines[0] == "[1/3] download@sst: unchanged"
    assert lines[1] == "[2/3] prepare@sst: running ..." and lines[2].startswith("[2/3] prepare@sst: ran in ")
    assert lines[3] == "[3/3] train: running ..."
    assert lines[4].strip().startswith("train: iteration 26/200") and lines[-1].startswith("[3/3] train: ran in ")
    assert not any("apache_beam" in line for line in lines)


def fake_dvc(tmp_path, code: int):
    script = tmp_path / "dvc"
    body = DVC_OUTPUT.replace("'", "'\\''")
    script.write_text(f"#!/bin/sh\nif [ \"$1\" = stage ]; then printf 'a\\nb\\nc\\n'; exit 0; fi\n"
                      f"printf '%s' '{body}'\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return str(script)


def test_dvc_output_goes_to_the_log_and_a_failure_shows_its_tail(tmp_path, capsys):
    log = tmp_path / "logs" / "repro.log"
    assert run([], log, fake_dvc(tmp_path, 0)) == 0
    out = capsys.readouterr().out
    assert "[2/3] prepare@sst: ran in" in out and "apache_beam" not in out
    assert "a thousand lines of this" in log.read_text()
    assert run([], log, fake_dvc(tmp_path, 1)) == 1
    captured = capsys.readouterr()
    assert "[3/3] train: failed after" in captured.out
    assert "dvc repro failed (exit 1)" in captured.err and "train: iteration 200/200" in captured.err


def test_params_that_would_run_away_are_refused_before_dvc_starts(tmp_path, monkeypatch, capsys):
    """An alias bomb or an oversized params.yaml (issue 42): one error line naming the file, and dvc (whose own
    loader took 3 GB on the bomb) is never started."""
    from deca.params_file import MAX_PARAMS_BYTES
    from infra.repro import main
    from tests.deca.test_config import mapping_bomb

    monkeypatch.chdir(tmp_path)
    started = tmp_path / "dvc-started"
    dvc = tmp_path / "dvc"
    dvc.write_text(f"#!/bin/sh\ntouch {started}\n")
    dvc.chmod(dvc.stat().st_mode | stat.S_IEXEC)
    for text, says in [(mapping_bomb(), "params.yaml:5: refused: its aliases"),
                       ("a: 1\n" * (MAX_PARAMS_BYTES // 5 + 1), "params.yaml: refused: 262,145 bytes")]:
        (tmp_path / "params.yaml").write_text(text)
        assert main(["--dvc", str(dvc)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: {says}") and err.count("\n") == 1 and not started.exists()
    (tmp_path / "params.yaml").write_text("train: {iterations: 5}\n")
    assert main(["--dvc", str(dvc), "--log", str(tmp_path / "log")]) == 0 and started.exists()
