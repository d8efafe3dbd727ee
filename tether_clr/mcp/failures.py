"""Infrastructure faults on the ``tools/call`` path, answered as results and logged once per incident.

``execute_batch`` raises, rather than disguising as a tool result, when the
infrastructure fails: the sink (the session log) cannot record a declaration,
an approval or an outcome (:class:`~tether_clr.SinkError`), a store cannot
reach its database (:class:`~tether_clr.StoreUnavailableError`). Left alone,
the SDK would answer that exception as a JSON-RPC error carrying the driver's
own text. The server answers instead a normal ``CallToolResult`` with
``isError: true``, code ``UNAVAILABLE``, a reason, and a *fixed* message that
names no driver, host or SQL (:data:`FIXED_MESSAGES`); the cause goes to the
server's log through an :class:`~tether_clr.foundations.incidents.IncidentLog`
per reason: the first failure of an incident with its traceback, then a
summary at most every 30 s, then one line when a call succeeds again.

A declaration that cannot be written aborts the batch before anything is
authorized, so the body never runs: the client is told so. An outcome that
cannot be written is answered the same way (its result is not handed out,
since the log does not hold it), with a message that says the call may have run.

Outcomes that the pipeline itself made from an infrastructure fault
(``approval_unavailable``, ``authority_unavailable``) carry the cause's text in
their message for the server's log; :func:`for_client` replaces it with the
fixed one before it leaves the server.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Final

from tether_clr.execution.ports import ForwardingSink, ToolCallSink
from tether_clr.foundations.errors import BatchAbortedError, ResultPolicyError, StoreUnavailableError
from tether_clr.foundations.incidents import IncidentLog
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes

__all__ = [
    "FIXED_MESSAGES",
    "INTERNAL_ERROR",
    "LOG_UNAVAILABLE",
    "RESULT_POLICY",
    "STORE_UNAVAILABLE",
    "CallFaults",
    "Tracked",
    "for_client",
]

logger = logging.getLogger("tether_clr.mcp")

LOG_UNAVAILABLE: Final = "log_unavailable"
"""The sink (the session log) could not record the call: its declaration, an approval or its outcome."""
STORE_UNAVAILABLE: Final = "store_unavailable"
"""A store raised :class:`~tether_clr.StoreUnavailableError` outside the sink (nothing on the path does today)."""
RESULT_POLICY: Final = "result_policy"
"""A result policy rejected the outcome (:class:`~tether_clr.ResultPolicyError`): nothing was recorded or handed out."""
INTERNAL_ERROR: Final = "internal_error"
"""Anything else the batch raised: a fault of the server, never the client's."""

_NOT_RUN = "The call log is unavailable, so the call was not run. Retry later."
FIXED_MESSAGES: Final[dict[str, str]] = {
    LOG_UNAVAILABLE: _NOT_RUN,
    STORE_UNAVAILABLE: "A store the server depends on is unavailable, so the call was not run. Retry later.",
    RESULT_POLICY: "The result was withheld by the server's result policy.",
    INTERNAL_ERROR: "The server failed to handle the call.",
    "approval_unavailable": "The approval service is unavailable, so the call was not run. Retry later.",
    "authority_unavailable": "The authorization service is unavailable, so the call was not run. Retry later.",
}
"""What the client is told per reason: fixed text, whatever the cause."""

_OUTCOME_NOT_RECORDED = "The call log is unavailable: this call's outcome could not be recorded, and it may have run."
_FROM_PIPELINE = frozenset({"approval_unavailable", "authority_unavailable"})


class Tracked(ForwardingSink):
    """The server's sink for one call, noting whether the batch got as far as the call's outcome."""

    def __init__(self, inner: ToolCallSink) -> None:
        super().__init__(inner)
        self.outcome_reached = False

    @property
    def parks_approvals(self) -> bool:
        return False  # an MCP request cannot wait for a later decision (see calls.never_parks)

    async def outcome_ready(self, outcome: ToolExecutionOutcome) -> None:
        self.outcome_reached = True
        await self.inner.outcome_ready(outcome)


def _single(exc: BaseException) -> BaseException:
    """The one exception inside nested groups of one (a trio nursery wraps its body's), else ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ResultPolicyError):
        return RESULT_POLICY
    if isinstance(exc, BatchAbortedError):  # SinkError, or a child batch's sink fault
        return LOG_UNAVAILABLE
    if isinstance(exc, StoreUnavailableError):
        return STORE_UNAVAILABLE
    return INTERNAL_ERROR


_WHAT = {
    LOG_UNAVAILABLE: "MCP tools/call: the call log cannot record calls; they are refused log_unavailable",
    STORE_UNAVAILABLE: "MCP tools/call: a store is unavailable; calls are refused store_unavailable",
    RESULT_POLICY: "MCP tools/call: a result policy aborted a call",
    INTERNAL_ERROR: "MCP tools/call: the batch raised; calls are refused internal_error",
}


SETTLE = 10.0
"""Seconds after an incident's last failure before a success ends it: one client whose calls keep failing
among others' successes is one incident (logged once, then summed up), not a traceback per failure."""


class CallFaults:
    """The server's answers to infrastructure faults, and its incident logs (one per reason)."""

    def __init__(self, log: logging.Logger = logger) -> None:
        self._incidents = {reason: IncidentLog(log, what, settle=SETTLE) for reason, what in _WHAT.items()}
        self._open: Sequence[IncidentLog] = tuple(self._incidents.values())

    def answer(self, exc: Exception, call: ToolCall | None, tracked: Tracked | None) -> ToolExecutionOutcome:
        """The outcome a client gets for ``exc`` (raised by the batch of ``call``); the cause is logged."""
        cause = _single(exc)
        reason = _reason(cause)
        self._incidents[reason].failed(cause)
        message = FIXED_MESSAGES[reason]
        if reason == LOG_UNAVAILABLE and tracked is not None and tracked.outcome_reached:
            message = _OUTCOME_NOT_RECORDED
        call_id, name = ("", "") if call is None else (call.call_id, call.name)
        return ToolExecutionOutcome.failed(call_id, name, Codes.UNAVAILABLE, message, reason)

    def succeeded(self) -> None:
        """A call went through: close the incidents that are open (a flag check each otherwise)."""
        for incident in self._open:
            if incident.open:
                incident.recovered()


def for_client(outcome: ToolExecutionOutcome) -> ToolExecutionOutcome:
    """``outcome``, or, when the pipeline made it from an infrastructure fault, the same code and reason with
    the fixed message (the recorded outcome keeps the cause's text, for the operator)."""
    failure = outcome.failure
    if failure is None or failure.reason not in _FROM_PIPELINE:
        return outcome
    return ToolExecutionOutcome.failed(outcome.call_id, outcome.name, failure.code, FIXED_MESSAGES[failure.reason], failure.reason)
