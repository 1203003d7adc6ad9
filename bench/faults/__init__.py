"""The fault bench: every bad input, fault and load case found so far (issues 12, 24, 34 and 42), each run and
given its verdict (bench/faults/case.py says what "handled" means).

The fast cases run in this process on the real code path (`deca.cli.main([...])` with its output captured,
or the library function a command calls), each in a temporary folder, in seconds. The slow cases (a
SIGKILL, a real full disk, a server under load, a DVC experiment) are slow tests; their verdict is the
outcome of that test (one pytest run for them all). tests/bench/test_faults.py runs each fast case as a
test.

    .venv/bin/python -m bench.faults --fast
    .venv/bin/python -m bench.faults            # and the slow tests (minutes: DVC, MLflow, Ray)
    .venv/bin/python -m bench.faults --skip test_dvc_pipeline --record docs/results/records/reliability.json

Modules: case (a case and its verdict, fast or slow), tools (deca in this process, tiny inputs), bad_input
(issues 12 and 24), odd_input and untrusted (issue 34's text, options, payloads and YAML bombs), issue 42's
gate (the promotion gate and the paired comparison); mlflow_serve (bad requests to `mlflow models serve`);
params (params files too large or bombs before DVC reads them, params.yaml changed mid-run); diskfull (a full
disk in training and evaluate); drain (`deca serve` and `deca serve --ray` on SIGTERM); reproduce (reproduce
by run id, lineage after `make run`), fault and training (faults), load, tables (the verdicts as Markdown, as
docs/results/reliability.md shows them), cli (the command and its record).
"""
from __future__ import annotations

from bench.faults.case import GROUPS, Case, NotHandled, Verdict, run_case

__all__ = ["GROUPS", "Case", "NotHandled", "Verdict", "all_cases", "run_case"]


def all_cases() -> list[Case]:
    """Every case, grouped in the order of GROUPS: bad input, fault, load."""
    from bench.faults import bad_input, fault, load, odd_input, training, untrusted
    from bench.faults import diskfull, drain, gate, mlflow_serve, params, reproduce  # issue 42

    issue42 = [case for module in (gate, mlflow_serve, params, diskfull, drain, reproduce) for case in module.cases()]
    found = [*bad_input.cases(), *odd_input.cases(), *untrusted.cases(), *issue42, *fault.cases(),
             *training.cases(), *load.cases()]
    return sorted(found, key=lambda c: GROUPS.index(c.group))
