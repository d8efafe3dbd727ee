"""Where a resumed step picks up: :class:`ResumePoint`, built from the session log, run by a batch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome, ToolFailureCodes

__all__ = ["WITHDRAWN", "ResumePoint", "already_approved", "withdrawn_outcome"]

WITHDRAWN = "withdrawn"
"""The DENIED ``reason`` of a waiting call the approver denied before the step resumed (never run)."""


@dataclass(frozen=True, slots=True)
class ResumePoint:
    """Where a resumed step picks up (built from the session log by :mod:`tether_clr.session.resume`).

    ``offset``: the position, in the model's proposal, of the first call passed
    to the run (the first parked one); declarations then carry their proposal
    positions. ``declared``: positions already recorded as ``tool/call``, not
    declared to the sink again. ``decided``: position -> the decision taken
    while the step was suspended, which answers that call's approval step.
    ``prior``: the outcomes the step delivered before it was suspended, in
    model order; the run returns them followed by its own. ``prior_contexts``:
    the additional contexts recorded with those outcomes, in their order.
    ``withdrawn``: positions of calls that waited behind the parked ones and
    that the approver denied meanwhile: each ends DENIED (:data:`WITHDRAWN`)
    at its admission, recorded like any outcome, and its body never runs.
    """

    offset: int
    declared: frozenset[int] = frozenset()
    decided: Mapping[int, ApprovalResult] = field(default_factory=dict)
    prior: tuple[ToolExecutionOutcome, ...] = ()
    prior_contexts: tuple[str, ...] = ()
    withdrawn: frozenset[int] = frozenset()


async def already_approved(execution: ToolExecution, reason: str | None) -> ApprovalResult:
    """Answers the approval step of a resumed call whose APPROVED decision was recorded already."""
    return ApprovalResult.APPROVED


def withdrawn_outcome(execution: ToolExecution) -> ToolExecutionOutcome:
    """The outcome of a withdrawn call (:attr:`ResumePoint.withdrawn`): DENIED, no body ran."""
    return ToolExecutionOutcome.failed(
        execution.call_id, execution.name, ToolFailureCodes.DENIED,
        "approval rejected (the approver denied this call while it waited behind a parked one)", WITHDRAWN,
    )
