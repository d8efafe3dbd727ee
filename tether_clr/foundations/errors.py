"""Exceptions: the few things that are raised rather than turned into outcomes.

Tool, listener and classifier failures are outcomes. What is raised here is either
a programming error at registration time, a signal a tool uses to ask for a
specific failure code, or an infrastructure fault that must not be disguised as a
tool result (a result policy rejecting an outcome, a sink that cannot record).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BatchAbortedError",
    "DuplicateToolError",
    "InvariantViolation",
    "ResultPolicyError",
    "SinkError",
    "StoreUnavailableError",
    "TetherError",
    "ToolArgumentError",
    "ToolError",
]


class TetherError(Exception):
    """Base class of every exception this library raises on purpose."""


class DuplicateToolError(TetherError, ValueError):
    """Two tools with one name in one scope layer: the model could not tell them apart."""


class ToolArgumentError(TetherError):
    """Raised by a tool when the arguments cannot be bound; becomes INVALID_ARGS."""


class ToolError(TetherError):
    """Raised by a tool to report TOOL_ERROR with exactly this message (no type prefix added)."""


class InvariantViolation(TetherError):
    """Raised by the built-in invariant result policy."""


class BatchAbortedError(TetherError):
    """An infrastructure fault stopped a batch.

    ``delivered`` holds the outcomes (``ToolExecutionOutcome``) the sink accepted
    before the fault, in model order, so the caller knows exactly what was
    recorded. Typed loosely because this foundation module knows no records.
    """

    def __init__(self, message: str, delivered: tuple[Any, ...] = ()) -> None:
        super().__init__(message)
        self.delivered = delivered


class ResultPolicyError(BatchAbortedError):
    """A result policy rejected an outcome (``outcome``, a ``ToolExecutionOutcome``);
    it reached neither the sink nor listeners."""

    def __init__(self, message: str, outcome: Any, delivered: tuple[Any, ...] = ()) -> None:
        super().__init__(message, delivered)
        self.outcome = outcome


class SinkError(BatchAbortedError):
    """The durable sink failed to record a declared call or an outcome."""


class StoreUnavailableError(TetherError):
    """A store (the session log, the control store) cannot reach its database after its bounded retries.

    An infrastructure fault, raised and never disguised as a tool result: the
    database is restarting, the network is cut, a lock is held too long. The
    store itself recovers (its next operation opens a fresh connection), so a
    caller may refuse this one request (UNAVAILABLE) and serve the next. The
    message is fixed by the store and names no driver, host or SQL; the cause is
    chained (``__cause__``) for the server's own log.
    """
