"""Beam's log noise quieted: imported before apache_beam (beam_options, dask_runner and dask_bags import it
first), so the filters are in place when Beam's import logs."""
from __future__ import annotations

import logging


class _QuietBeamImport(logging.Filter):
    """Beam logs a spurious root-logger warning about apitools on import (no GCP client is used here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "apitools not found" not in record.getMessage()


class _NoInterruptTraceback(logging.Filter):
    """Beam logs a whole traceback when Ctrl-C lands in a DoFn, before re-raising it; the CLI says
    "interrupted" instead (the traceback stays available with `deca -v`, which logs at DEBUG)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "KeyboardInterrupt" not in record.getMessage() or logging.getLogger().level <= logging.DEBUG


logging.getLogger().addFilter(_QuietBeamImport())
logging.getLogger("apache_beam.runners.common").addFilter(_NoInterruptTraceback())
