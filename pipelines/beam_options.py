"""Beam plumbing shared by the prepare and vocabulary jobs: options, running, errors, counters.

Runner and options are standard Beam `PipelineOptions`: ``prepare.runner`` and ``prepare.beam_options``
from params.yaml, then whatever Beam flags the command line adds (later flags win), e.g.
``--runner=FlinkRunner --flink_master=host:8081 --environment_type=LOOPBACK``. The local default is
an explicitly named in-process runner (FnApiRunner): Beam's default runner first tries to download
the Prism binary, which fails or hangs offline.
"""
from __future__ import annotations

import atexit
import contextlib
import gc
import logging
import os
import re
from typing import Any, Iterator, Sequence

from pipelines import beam_logging  # noqa: F401  (first: quiets Beam's import-time warning)

import apache_beam as beam  # noqa: E402
from apache_beam.options.pipeline_options import (  # noqa: E402
    DirectOptions, PipelineOptions, StandardOptions, _BeamArgumentParser)

from deca.config import PrepareConfig  # noqa: E402
from deca.errors import ConfigError, DataError, DecaError, _rebuild_data_error  # noqa: E402

LOG = logging.getLogger(__name__)


def beam_flags(cfg: PrepareConfig, beam_args: Sequence[str] = ()) -> list[str]:
    """params.yaml's beam_options, then the command line's Beam flags; --runner from params unless given."""
    flags = list(cfg.beam_options) + list(beam_args)
    if not any(f == "--runner" or f.startswith("--runner=") for f in flags):
        flags.insert(0, f"--runner={cfg.runner}")
    return flags


DASK_RUNNERS = ("DaskRunner", "pipelines.dask_runner.DaskRunner", "apache_beam.runners.dask.dask_runner.DaskRunner")


def _needs_dask(flags: Sequence[str]) -> bool:
    """Whether the flags name the DaskRunner or a Dask option (whose module, slow to import, declares them)."""
    return any(f.startswith("--dask_") or f.split("=", 1)[-1] in DASK_RUNNERS for f in flags)


def unknown_flags(flags: Sequence[str]) -> list[str]:
    """The flags no Beam PipelineOptions class knows (typos would otherwise be dropped with a warning)."""
    if _needs_dask(flags):
        import pipelines.dask_runner  # noqa: F401  (declares the --dask_* options)
    parser = _BeamArgumentParser(allow_abbrev=False)
    seen = set()
    for cls in PipelineOptions.__subclasses__():
        if str(cls) not in seen:
            seen.add(str(cls))
            cls._add_argparse_args(parser)  # noqa: SLF001  (how Beam itself collects its options)
    _, unknown = parser.parse_known_args(list(flags))
    return [f for f in unknown if f.startswith("-")]


def pipeline_options(cfg: PrepareConfig, beam_args: Sequence[str] = ()) -> PipelineOptions:
    """PipelineOptions for a job; an unknown flag is a ConfigError naming it."""
    flags = beam_flags(cfg, beam_args)
    unknown = unknown_flags(flags)
    if unknown:
        raise ConfigError(f"unknown option(s) {', '.join(unknown)}: neither a `deca prepare` option nor a Beam "
                          "pipeline option (see `deca prepare --help`)")
    return PipelineOptions(flags)


def runner_name(options: PipelineOptions) -> str:
    return str(options.view_as(StandardOptions).runner)


def is_dask(options: PipelineOptions) -> bool:
    """Whether the job runs on the DaskRunner (`pipelines.dask_runner`)."""
    return runner_name(options) in DASK_RUNNERS


@contextlib.contextmanager
def job_runner(options: PipelineOptions) -> Iterator[tuple[Any, int]]:
    """(runner, bins) for one job: the runner object to build the `beam.Pipeline` with (None: Beam makes
    it from --runner) and the groups to spread the work over (`local_workers`; on the DaskRunner, the
    cluster's worker threads). A DaskRunner is connected (or starts its local cluster) here, and is closed,
    its local cluster's workers stopped, when the block ends, whether the job succeeded or not."""
    if not is_dask(options):
        yield None, local_workers(options)
        return
    from pipelines.dask_runner import DaskRunner

    runner = DaskRunner()
    try:
        yield runner, runner.open(options)
    finally:
        runner.close()


LOCAL_RUNNERS = ("FnApiRunner", "DirectRunner", "SwitchingDirectRunner", "BundleBasedDirectRunner")


def local_workers(options: PipelineOptions) -> int:
    """The worker count of a local runner (--direct_num_workers; 0 means one per CPU), or 0 for any other
    runner, whose parallelism the pipeline cannot know."""
    name = runner_name(options).rsplit(".", 1)[-1]
    if name not in LOCAL_RUNNERS and name != "None":
        return 0
    workers = options.view_as(DirectOptions).direct_num_workers
    if workers == 0:
        return os.cpu_count() or 1
    return max(workers or 1, 1)


_STEP = re.compile(r" \[while running '[^']*'\]")


def unwrap_data_error(exc: BaseException) -> DataError | None:
    """The DataError behind an exception re-raised by a Beam runner (which wraps or stringifies it)."""
    seen = set()
    cur: BaseException | None = exc
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, DataError):
            return cur
        cur = cur.__cause__ or cur.__context__
    text = str(exc)
    start = text.find("DataError: ")
    if start < 0:
        return None
    # The DataError text is "<path>[:<line>]: <message>" plus indented "  fix: ..." lines; a runner may
    # append step names and a remote traceback after it.
    lines = text[start + len("DataError: "):].split("\n")
    kept = [lines[0]]
    for line in lines[1:]:
        if not line.startswith("  ") or line.lstrip().startswith("File "):
            break
        kept.append(line)
    message = _STEP.sub("", "\n".join(kept)).rstrip()
    where = re.match(r"(.+?)(?::(\d+))?: ", message)
    return _rebuild_data_error(where.group(1) if where else "?", message,
                               int(where.group(2)) if where and where.group(2) else None, None)


def run_pipeline(p: beam.Pipeline) -> Any:
    """Run `p` to completion; a DataError raised anywhere inside comes out as that DataError."""
    try:
        result = p.run()
        state = result.wait_until_finish()
    except DecaError:
        raise
    except Exception as exc:  # Beam wraps worker exceptions
        err = unwrap_data_error(exc)
        if err is not None:
            raise err from None
        raise
    if state is not None and str(state).split(".")[-1] not in ("DONE", "UNKNOWN"):
        raise DecaError(f"the Beam pipeline ended in state {state}")
    return result


_FAST_EXIT = []


def fast_worker_exit() -> bool:
    """In a Beam SDK worker process (started by the runner, e.g. the local runner's multi_processing
    workers): freeze the garbage collector's objects at exit, so that the interpreter's finalization
    does not scan the ~135k objects Beam leaves (0.2 s per worker; the local runner stops its workers
    one after the other, so with 2 workers that is 0.4 s of a run). Nothing changes before exit.
    Returns whether it applies to this process."""
    if "CONTROL_API_SERVICE_DESCRIPTOR" not in os.environ:  # set for SDK worker processes only
        return False
    if not _FAST_EXIT:
        _FAST_EXIT.append(atexit.register(gc.freeze))
    return True


def counters(result: Any, namespace: str) -> dict[str, int]:
    """Beam Metrics counters of one namespace, by name (committed values where the runner has them)."""
    out: dict[str, int] = {}
    try:
        query = result.metrics().query()
    except Exception:  # some runners do not report metrics
        return out
    for c in query.get("counters", []):
        if c.key.metric.namespace != namespace:
            continue
        value = c.committed if c.committed is not None else c.attempted
        out[c.key.metric.name] = out.get(c.key.metric.name, 0) + int(value or 0)
    return dict(sorted(out.items()))
