"""How a child call's outcome reaches its parent's code when it is not a success: an exception carrying it.

A refused or failed child is a binding answer the parent's code must face,
never a silent ``None``: :func:`child_call_error` picks the exception for an
outcome's code. Each is a :class:`~tether_clr.ToolError`, so a parent that does
not catch it ends TOOL_ERROR with its message; ``ChildCallCancelled`` is also an
:class:`~tether_clr.OperationCancelledError`, so an uncaught one ends the parent ABORTED.

Floor 2 (records).
"""

from __future__ import annotations

from tether_clr.foundations.cancellation import OperationCancelledError
from tether_clr.foundations.errors import ToolError
from tether_clr.records.outcomes import ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

__all__ = ["ChildCallCancelled", "ChildCallError", "ChildCallFailed", "ChildCallRefused", "child_call_error"]


class ChildCallError(ToolError):
    """A child call did not succeed; ``outcome`` is its outcome, as recorded (``code`` and ``reason`` from it)."""

    def __init__(self, outcome: ToolExecutionOutcome) -> None:
        failure = outcome.failure
        if failure is None:
            raise ValueError("a ChildCallError carries a failed outcome")
        super().__init__(f"child call {outcome.call_id!r} ({outcome.name}) ended {failure.code}: {failure.message}")
        self.outcome = outcome

    def __reduce__(self) -> tuple[type[ChildCallError], tuple[ToolExecutionOutcome]]:
        return type(self), (self.outcome,)

    @property
    def code(self) -> Codes:
        assert self.outcome.failure is not None
        return self.outcome.failure.code

    @property
    def reason(self) -> str | None:
        return self.outcome.reason


class ChildCallRefused(ChildCallError):
    """The child was refused and its body never ran: UNKNOWN_TOOL, INVALID_ARGS, DENIED or UNAVAILABLE."""


class ChildCallFailed(ChildCallError):
    """The child failed: TOOL_ERROR (its body, a listener or a guard) or BLOCKED (a post-execute listener)."""


class ChildCallCancelled(ChildCallError, OperationCancelledError):
    """The child was cancelled with its parent: ABORTED (its body had started) or ABORTED_BEFORE_DISPATCH."""


_REFUSED = frozenset({Codes.UNKNOWN_TOOL, Codes.INVALID_ARGS, Codes.DENIED, Codes.UNAVAILABLE})
_CANCELLED = frozenset({Codes.ABORTED, Codes.ABORTED_BEFORE_DISPATCH})


def child_call_error(outcome: ToolExecutionOutcome) -> ChildCallError:
    """The exception a failed child's ``outcome`` reaches its parent's code as."""
    code = outcome.code
    if code in _REFUSED:
        return ChildCallRefused(outcome)
    if code in _CANCELLED:
        return ChildCallCancelled(outcome)
    return ChildCallFailed(outcome)
