"""The framework as the approver: approval providers for one batch, bound to each call's fingerprint.

A framework's human-in-the-loop answers *outside* the pipeline (pydantic-ai's
``DeferredToolResults``, the OpenAI Agents SDK's ``RunState.approve``,
LangGraph's ``Command(resume=...)``). These providers carry that answer into
the pipeline as the :class:`~tether_clr.ApprovalProvider`'s answer:

* :class:`CapturingApprovals` answers every request ``REJECTED`` (so the body
  never runs) and keeps what was asked, as a
  :class:`~tether_clr.PendingApproval` (name, canonical arguments, their
  fingerprint, reason): the adapter hands that to the framework as its approval request;
* :class:`BoundApprovals` answers the framework's decision for a call id, but only
  when the call's fingerprint (:func:`~tether_clr.call_fingerprint` over the
  arguments the pipeline is about to run with) equals the one decided on; an
  approval given for other arguments answers ``REJECTED`` (DENIED, and the
  adapter tells the model why: :data:`MISMATCH_MESSAGE`, reason
  :data:`MISMATCH_REASON`); a call with no decision answers ``REJECTED`` too
  (fail closed).

A framework rejection is ``ApprovalResult.REJECTED``: the call ends DENIED
with the message ``approval rejected (<reason>)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome, ToolFailureCodes
from tether_clr.records.suspension import PendingApproval, call_fingerprint

__all__ = [
    "MISMATCH",
    "MISMATCH_MESSAGE",
    "MISMATCH_REASON",
    "BoundApprovals",
    "CapturingApprovals",
    "Decision",
    "DeferringApprovals",
    "Mismatch",
    "mismatched",
]

Decision = tuple[ApprovalResult, str]
"""The framework's answer for one call: ``(APPROVED or REJECTED, the fingerprint the approver saw)``."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    """An explicit decision: the framework approved other arguments than the call now has (say, pydantic-ai's
    ``ToolApproved(override_args=...)``). The call is refused DENIED :data:`MISMATCH_REASON`, never run."""


MISMATCH = Mismatch()
"""The one :class:`Mismatch` value: pass it as a call's decision (``run_decided``, ``resume``)."""

MISMATCH_REASON = "approval_mismatch"
MISMATCH_MESSAGE = "the approval was given for other arguments than this call's; it does not apply"


class CapturingApprovals:
    """Answers ``REJECTED`` to every request, remembering it: :attr:`asked` maps call id to its request."""

    __slots__ = ("asked",)

    def __init__(self) -> None:
        self.asked: dict[str, PendingApproval] = {}

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        arguments = execution.arguments_json
        self.asked[execution.call_id] = PendingApproval(
            execution.call_id, execution.name, arguments, call_fingerprint(execution.name, arguments), reason,
            len(self.asked),
        )
        return ApprovalResult.REJECTED


class BoundApprovals:
    """Answers each call id's decision when its fingerprint matches; ``REJECTED`` otherwise.

    :attr:`mismatched`: the call ids whose decision was for other arguments
    (the adapter replaces their DENIED message with :data:`MISMATCH_MESSAGE`);
    :attr:`unanswered`: those asked with no decision at all.
    """

    __slots__ = ("decisions", "mismatched", "unanswered")

    def __init__(self, decisions: Mapping[str, Decision | Mismatch]) -> None:
        self.decisions = dict(decisions)
        self.mismatched: set[str] = set()
        self.unanswered: set[str] = set()

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        decision = self.decisions.get(execution.call_id)
        if decision is None:
            self.unanswered.add(execution.call_id)
            return ApprovalResult.REJECTED
        if isinstance(decision, Mismatch):
            self.mismatched.add(execution.call_id)
            return ApprovalResult.REJECTED
        result, fingerprint = decision
        if fingerprint != call_fingerprint(execution.name, execution.arguments_json):
            self.mismatched.add(execution.call_id)
            return ApprovalResult.REJECTED
        return ApprovalResult.APPROVED if result is ApprovalResult.APPROVED else ApprovalResult.REJECTED


class DeferringApprovals:
    """Answers ``DEFERRED`` to every request: with a session store's sink, the call parks durably."""

    __slots__ = ()

    async def request(self, execution: ToolExecution, reason: str | None) -> ApprovalResult:
        return ApprovalResult.DEFERRED


def mismatched(outcome: ToolExecutionOutcome) -> ToolExecutionOutcome:
    """``outcome`` (a DENIED of an approval given for other arguments) as the model and host are told it:
    DENIED :data:`MISMATCH_REASON` with :data:`MISMATCH_MESSAGE`."""
    return ToolExecutionOutcome.failed(outcome.call_id, outcome.name, ToolFailureCodes.DENIED, MISMATCH_MESSAGE, MISMATCH_REASON)
