"""Admission only: run a batch's calls through every stage before their bodies, and stop there.

An agent framework that asks a human BEFORE it invokes a tool (the OpenAI
Agents SDK's ``needs_approval``) needs to know whether the pipeline would ask
approval for a call, without running it. Inside :func:`admission_only`, a
batch admits its calls as it always does (pre-execute waterfall, approval,
guards, re-authorization) and then ends every call that was admitted
ABORTED_BEFORE_DISPATCH, reason ``admission_only``, instead of running its
body: whatever the approval provider and the listeners answer, no body runs.

Layer 4 (execution): read once per batch, when it is made.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager

from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

__all__ = ["ADMISSION_ONLY", "admission_only", "admission_only_active", "admitted_not_run"]

ADMISSION_ONLY = "admission_only"
"""The reason of a call a batch admitted but did not run, inside :func:`admission_only`."""

_ACTIVE: contextvars.ContextVar[bool] = contextvars.ContextVar("tether_clr_admission_only", default=False)


@contextmanager
def admission_only() -> Iterator[None]:
    """Batches made inside this block run no body: each admitted call ends ABORTED_BEFORE_DISPATCH."""
    reset = _ACTIVE.set(True)
    try:
        yield
    finally:
        _ACTIVE.reset(reset)


def admission_only_active() -> bool:
    """Whether a batch made now runs admission only."""
    return _ACTIVE.get()


def admitted_not_run(execution: ToolExecution) -> ToolExecutionOutcome:
    """The outcome of a call admitted inside :func:`admission_only`: its body was not run."""
    return ToolExecutionOutcome.failed(
        execution.call_id, execution.name, Codes.ABORTED_BEFORE_DISPATCH,
        "admitted; not run (admission only)", ADMISSION_ONLY,
    )
