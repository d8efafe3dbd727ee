"""Durable approvals, as records: a parked call, a suspended batch, and the fingerprint that binds a decision.

An approval provider may answer :attr:`~tether_clr.ApprovalResult.DEFERRED`:
nobody can decide now (the approver is a person who is not there, a ticket in
another system). The call is *parked*: its body does not run, no later call of
the step is admitted, bodies already started finish and are delivered, and
``execute_batch`` returns :class:`BatchSuspended` instead of a list. The step
lives on in the session log (``approval/asked`` with the call's exact arguments
and their fingerprint, then ``approval/decided`` ``deferred``), and
:meth:`ToolRegistry.resume` continues it later, possibly in another process.

Floor 2 (records): no imports above the outcome records.
"""

from __future__ import annotations

from dataclasses import dataclass

from tether_clr.foundations.canonical import sha256_digest
from tether_clr.records.outcomes import ToolExecutionOutcome

__all__ = ["BatchSuspended", "PendingApproval", "call_fingerprint"]


def call_fingerprint(name: str, arguments_json: str) -> str:
    """``"sha256:"`` over the RFC 8785 form of ``{"name", "arguments"}``: what an approver saw.

    ``arguments_json`` is the exact argument text the pipeline would run with
    (the canonical JSON of :attr:`ToolExecution.arguments_json`); a decision
    bound to this fingerprint cannot be replayed against other arguments or
    another tool.
    """
    return sha256_digest({"name": name, "arguments": arguments_json})


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A call parked for a decision: its body has not run.

    ``arguments`` is the canonical JSON text of the call's validated arguments,
    exactly what the approver is asked about and what ``fingerprint``
    (:func:`call_fingerprint`) covers; pass the fingerprint back with the
    decision (``decisions={call_id: (ApprovalResult.APPROVED, fingerprint)}``)
    to bind the decision to these arguments. ``reason`` is why approval was
    asked (the listener's reason, or ``"tool 'NAME' requires approval"``).
    ``index`` is the call's position in the model's proposal.
    """

    call_id: str
    name: str
    arguments: str
    fingerprint: str
    reason: str | None
    index: int = 0


@dataclass(frozen=True, slots=True)
class BatchSuspended:
    """What ``execute_batch`` (or ``resume``) returns when a call was parked instead of a list.

    ``delivered``: the outcomes recorded so far, in model order (every call
    before the first parked one). ``pending``: the parked calls, in model order.
    The calls after the first parked one were not admitted: no body of theirs
    ran; they run when the step is resumed (or end ABORTED_BEFORE_DISPATCH when
    it is cancelled). ``additional_contexts``: what post-execute listeners added
    for the delivered calls, in their model order (see :class:`~tether_clr.BatchOutcomes`).
    """

    delivered: tuple[ToolExecutionOutcome, ...]
    pending: tuple[PendingApproval, ...]
    additional_contexts: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.pending:
            raise ValueError("a suspended batch has at least one pending approval")
