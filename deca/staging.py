"""The outputs of one command moved in together: each is written beside its target under a temporary name
and renamed into place only when every one is complete (`Staging.commit`). On an error every temporary is
removed, with the directories made for them, so a failed command (a full disk) leaves no partial output and
the previous outputs as they were.

    with Staging() as stage:
        write_json(stage.file("eval/metrics.json"), doc)       # renamed to eval/metrics.json
        fill(stage.directory("eval/predictions"))              # swapped in for eval/predictions as a whole
        chart(stage.directory("eval/report", whole=False) / "headline.png")  # moved into eval/report

An OSError of the writing comes out as a `WriteError` naming the target, not the temporary name.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from deca import io as deca_io  # its _fsync looked up at each call (tests replace it)
from deca.io import as_write_error, make_dirs, remove_dirs, swap_dir

SUFFIX = ".staged"


@dataclass(frozen=True)
class _Stage:
    tmp: Path  # the temporary directory beside the target
    root: Path  # what a path under `tmp` stands for
    whole: bool  # swap `tmp` in for `root`; else move its files into `root`
    created: tuple[Path, ...]  # the directories made for it (make_dirs)


class Staging:
    """Temporary directories beside the targets of one command, renamed into place together (module docstring).
    As a context manager: committed when the block ends, discarded when it raises."""

    def __init__(self):
        self._stages: list[_Stage] = []

    def directory(self, target: str | Path, whole: bool = True) -> Path:
        """An empty directory to fill for `target`: at commit it replaces `target` as a whole (`whole`), or its
        files are moved into `target` (other files there stay)."""
        target = Path(target)
        created = make_dirs(target.parent, target)
        try:
            tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=SUFFIX, dir=target.parent))
        except BaseException:
            remove_dirs(created)
            raise
        self._stages.append(_Stage(tmp, target, whole, tuple(created)))
        return tmp

    def file(self, target: str | Path) -> Path:
        """A path to write for the file `target` (it does not exist yet); renamed to `target` at commit."""
        target = Path(target)
        tmp = self.directory(target)
        self._stages[-1] = _Stage(tmp, target.parent, False, self._stages[-1].created)
        return tmp / target.name

    def final(self, path: str | Path) -> Path:
        """Where a path under a staged directory will be once committed."""
        path = Path(path)
        stage = next(s for s in self._stages if path == s.tmp or path.is_relative_to(s.tmp))
        return stage.root / path.relative_to(stage.tmp)

    def commit(self) -> None:
        """Rename everything into place (renames: no space is needed)."""
        for stage in self._stages:
            if stage.whole:
                swap_dir(stage.tmp, stage.root)
                deca_io._fsync(stage.root.parent)
                continue
            for path in sorted(p for p in stage.tmp.rglob("*") if p.is_file()):
                target = stage.root / path.relative_to(stage.tmp)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(path, target)
            shutil.rmtree(stage.tmp)
            deca_io._fsync(stage.root)
        self._stages = []

    def discard(self) -> None:
        """Remove every temporary directory and the directories made for them, newest first."""
        for stage in reversed(self._stages):
            shutil.rmtree(stage.tmp, ignore_errors=True)
            remove_dirs(list(stage.created))
        self._stages = []

    def write_error(self, exc: BaseException) -> BaseException:
        """`exc` as a WriteError naming the target of the staged file it failed to write (deca.io.as_write_error),
        else `exc`."""
        for stage in self._stages:
            err = as_write_error(exc, stage.root, stage.tmp)
            if err is not exc:
                return err
        return exc

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is None:
            try:
                self.commit()
            except BaseException:
                self.discard()
                raise
            return False
        err = self.write_error(exc)
        self.discard()
        if err is not exc:
            raise err from exc
        return False
