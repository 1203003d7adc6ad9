"""Training progress: rank 0 pushes messages (`Progress`) to a Ray actor (in local mode an in-process
`train.local_mode.LocalSink`), the driver shows them (`ProgressBar`).

On a terminal, a tqdm bar (iteration, phase, loss, tokens/s); elsewhere (a DVC stage, a log file, CI) or
with `--no-progress`, one plain line every `every_s` seconds, so that a long run is never silent. A run
bounded by `train.max_minutes` shows the time left instead of an ETA for its placeholder iteration count.
"""
from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

from tqdm import tqdm


def resumed_iteration(run_dir: str | Path) -> int:
    """The iteration a resumed run continues from: that of the latest checkpoint Ray Train registered for it
    (its ``checkpoint_manager_snapshot.json``), 0 when there is none."""
    try:
        snapshot = json.loads((Path(run_dir) / "checkpoint_manager_snapshot.json").read_text(encoding="utf-8"))
        results = [snapshot.get("latest_checkpoint_result")] + list(snapshot.get("checkpoint_results") or [])
        return max((int(r["metrics"]["iteration"]) for r in results if r and "iteration" in (r.get("metrics") or {})),
                   default=0)
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return 0


class Progress:
    """Fire-and-forget progress messages from rank 0 to the driver's progress bar (a Ray actor; None: no-op)."""

    def __init__(self, sink, min_interval: float = 0.5):
        self.sink, self.min_interval, self.last = sink, min_interval, 0.0

    def push(self, force: bool = False, **values) -> None:
        now = time.monotonic()
        if self.sink is None or (not force and now - self.last < self.min_interval):
            return
        self.last = now
        send = getattr(self.sink.push, "remote", self.sink.push)  # a Ray actor's method, or a LocalSink's
        send({k: v() if callable(v) else v for k, v in values.items()})  # lazy values: only when sent


class ProgressBar:
    """Drains the progress actor every half second into a bar or periodic lines."""

    def __init__(self, sink, total: int, bar: bool = True, max_minutes: float | None = None, every_s: float = 30.0,
                 stream=None, start: int = 0):
        self.sink, self.total, self.max_minutes, self.every_s = sink, total, max_minutes, every_s
        self.stream = stream or sys.stderr
        self.bar = bar and self.stream.isatty()
        self.shown: dict[str, str] = {}
        self.start = min(max(int(start), 0), total)  # a resumed run continues from there (`resumed_iteration`)
        self.iteration = self.start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self):
        if self.sink is not None:
            self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def update(self, items: list[dict]) -> None:
        """Fold progress messages into the iteration and the fields shown."""
        for item in items:
            if "iteration" in item:
                self.iteration = min(int(item["iteration"]), self.total)
            if "phase" in item:
                self.shown["phase"] = str(item["phase"])
            if item.get("loss") is not None:
                self.shown["loss"] = f"{item['loss']:.3f}"
            if item.get("tokens_per_s") is not None:
                self.shown["tok/s"] = f"{item['tokens_per_s']:.0f}"
            if "event" in item:
                self.shown["event"] = item["event"]
            elif "loss" in item:
                self.shown.pop("event", None)

    def line(self, elapsed: float) -> str:
        """One plain progress line: iteration, elapsed and remaining time, and the fields shown."""
        if self.max_minutes:
            left = f"{max(0.0, self.max_minutes - elapsed / 60):.1f} min left of {self.max_minutes:g}"
        elif self.iteration > self.start:  # the rate of this process's iterations, not the resumed ones
            left = f"~{(self.total - self.iteration) * elapsed / (self.iteration - self.start) / 60:.1f} min left"
        else:
            left = f"resuming from {self.start}" if self.start else "starting"
        fields = ", ".join(f"{k}={v}" for k, v in self.shown.items())
        of = "" if self.max_minutes else f"/{self.total}"
        return f"train: iteration {self.iteration}{of}, {elapsed / 60:.1f} min, {left}" + (f"; {fields}" if fields else "")

    def _drain(self) -> list[dict]:
        if not hasattr(self.sink.drain, "remote"):  # a LocalSink (local mode)
            return self.sink.drain()
        import ray

        try:
            return ray.get(self.sink.drain.remote(), timeout=5)
        except Exception:  # the actor can be briefly unreachable during a restart
            return []

    def _run(self) -> None:
        start = last_line = time.monotonic()
        printed = None
        bar = tqdm(total=None if self.max_minutes else self.total, initial=self.start, desc="train", unit="it",
                   dynamic_ncols=True, file=self.stream) if self.bar else None
        try:
            while True:
                stopping = self._stop.wait(0.5)
                items = self._drain()
                self.update(items)
                now = time.monotonic()
                if bar is not None and items:
                    bar.n = self.iteration
                    postfix = dict(self.shown)
                    if self.max_minutes:
                        postfix["left"] = f"{max(0.0, self.max_minutes - (now - start) / 60):.1f}min"
                    bar.set_postfix(postfix, refresh=False)
                    bar.refresh()
                elif bar is None and (now - last_line >= self.every_s or stopping):
                    text = self.line(now - start)
                    if not (stopping and printed is not None and printed.split(",")[0] == text.split(",")[0]):
                        print(text, file=self.stream, flush=True)  # (the last state is not printed twice)
                    printed, last_line = text, now
                if stopping:
                    break
        finally:
            if bar is not None:
                bar.close()
