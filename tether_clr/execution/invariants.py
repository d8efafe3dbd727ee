"""The built-in result policy a new registry installs: every record is attributable to its call."""

from __future__ import annotations

from tether_clr.foundations.errors import InvariantViolation
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome

__all__ = ["check_invariants"]


async def check_invariants(execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
    """The built-in result policy: records must be attributable to their call."""
    if not execution.name:
        raise InvariantViolation("execution name is empty")
    if not execution.call_id:
        raise InvariantViolation("execution call_id is empty")
    if outcome.call_id != execution.call_id:
        raise InvariantViolation(
            f"outcome call_id {outcome.call_id!r} does not match execution call_id {execution.call_id!r}"
        )
