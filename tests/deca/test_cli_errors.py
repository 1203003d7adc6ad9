"""One error path for every command: one line, the right exit code, a traceback only with -v."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from deca.cli import main

ROOT = Path(__file__).resolve().parents[2]


def failing(exc):
    def run(args):
        raise exc
    return run


def test_a_full_disk_is_one_line_naming_the_path(monkeypatch, capsys):
    monkeypatch.setattr("deca.ls_cli.run", failing(OSError(28, "No space left on device", "/data/processed/x")))
    assert main(["ls"]) == 1
    err = capsys.readouterr().err
    assert "error: /data/processed/x: No space left on device" in err and "Traceback" not in err


def test_an_os_error_wrapped_by_a_framework_is_found(monkeypatch, capsys):
    def run(args):
        try:
            raise PermissionError(13, "Permission denied", "/ckpt/state.pt")
        except OSError as exc:
            raise RuntimeError("worker failed") from exc
    monkeypatch.setattr("deca.ls_cli.run", run)
    assert main(["ls"]) == 1
    assert "error: /ckpt/state.pt: Permission denied" in capsys.readouterr().err


def test_an_interrupt_re_raised_by_beam_exits_130(monkeypatch, capsys):
    monkeypatch.setattr("deca.ls_cli.run", failing(RuntimeError("KeyboardInterrupt [while running 'Read']")))
    assert main(["ls"]) == 130
    assert capsys.readouterr().err.strip() == "interrupted"


def test_verbose_prints_the_traceback(monkeypatch, capsys):
    monkeypatch.setattr("deca.ls_cli.run", failing(OSError(28, "No space left on device", "/x")))
    assert main(["-v", "ls"]) == 1
    assert "Traceback" in capsys.readouterr().err


def test_a_bug_is_not_hidden(monkeypatch):
    monkeypatch.setattr("deca.ls_cli.run", failing(ZeroDivisionError("bug")))
    with pytest.raises(ZeroDivisionError):
        main(["ls"])


@pytest.mark.fault("fault", "Ctrl-C during deca prepare: exit 130, no staging folder", "earlier")
@pytest.mark.slow
def test_ctrl_c_during_prepare(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "deca" / "slow_prepare_main.py"), str(tmp_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "started"
    deadline = time.monotonic() + 60
    while not list((tmp_path / "out").glob(".staging-*")) and time.monotonic() < deadline:
        time.sleep(0.2)  # the pipeline is running once its staging folder exists
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err[-2000:]
    assert err.strip().splitlines()[-1] == "interrupted" and "Traceback" not in err
    assert not list((tmp_path / "out").glob(".staging-*")) and not (tmp_path / "out" / "slow").exists()


def test_a_full_disk_while_writing_is_one_line_naming_the_file_and_the_fix(monkeypatch, capsys, tmp_path):
    import errno

    from deca.io import write_json

    def full_disk(path):
        raise OSError(errno.ENOSPC, "No space left on device")  # no file name, like a failed write() or fsync()

    monkeypatch.setattr("deca.io._fsync", full_disk)
    monkeypatch.setattr("deca.ls_cli.run", lambda args: write_json(tmp_path / "out" / "m.json", {}))
    assert main(["ls"]) == 1
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: {tmp_path / 'out' / 'm.json'}: No space left on device",
                                f"  fix: free space on the disk that holds {tmp_path / 'out'} (or write the output "
                                "elsewhere), then run it again"]
    assert not (tmp_path / "out").exists()


def test_a_reader_that_goes_away_ends_quietly():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(f"{sys.executable} -m deca.cli ls | head -1", shell=True, capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=60)
    assert proc.returncode == 0 and len(proc.stdout.splitlines()) == 1
    assert proc.stderr == "", proc.stderr
    closed = subprocess.Popen([sys.executable, "-m", "deca.cli", "ls"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, cwd=ROOT)
    closed.stdout.close()  # before the command writes anything
    assert closed.wait(timeout=60) == 141 and closed.stderr.read() == b""


@pytest.mark.parametrize("command", sorted(__import__("deca.cli", fromlist=["COMMANDS"]).COMMANDS))
def test_every_subcommand_imports_and_has_help(command, capsys):
    """Each subcommand's module imports (a moved name fails here, not in a DVC stage) and prints its --help."""
    with pytest.raises(SystemExit) as done:
        main([command, "--help"])
    assert done.value.code == 0 and f"deca {command}" in capsys.readouterr().out
