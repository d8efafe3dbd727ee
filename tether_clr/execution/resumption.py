"""Where a resumed step picks up: :class:`ResumePoint`, built from the session log, run by a batch."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome

__all__ = ["ResumePoint", "already_approved"]


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
    """

    offset: int
    declared: frozenset[int] = frozenset()
    decided: Mapping[int, ApprovalResult] = field(default_factory=dict)
    prior: tuple[ToolExecutionOutcome, ...] = ()
    prior_contexts: tuple[str, ...] = ()


async def already_approved(execution: ToolExecution, reason: str | None) -> ApprovalResult:
    """Answers the approval step of a resumed call whose APPROVED decision was recorded already."""
    return ApprovalResult.APPROVED
