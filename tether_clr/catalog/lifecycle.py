"""The lifecycle of one tool version, and the one rule for moving along it.

DRAFT -> VALIDATED -> ACTIVE -> DEPRECATED -> DISABLED -> RETIRED.

Floor 2 (records); pure.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["StatusTransition", "ToolStatus", "status_transition"]


class ToolStatus(Enum):
    """Where a tool version is in its life.

    Only ACTIVE and DEPRECATED versions are ever assembled or run; DRAFT and
    VALIDATED are not yet, DISABLED and RETIRED no longer (and that is checked
    again right before each body runs, so it applies to old snapshots too).
    """

    DRAFT = "draft"
    VALIDATED = "validated"
    ACTIVE = "active"
    DEPRECATED = "deprecated"
    DISABLED = "disabled"
    RETIRED = "retired"

    @property
    def is_callable(self) -> bool:
        """ACTIVE or DEPRECATED: may be assembled and run."""
        return self is ToolStatus.ACTIVE or self is ToolStatus.DEPRECATED


_CHAIN: tuple[ToolStatus, ...] = tuple(ToolStatus)
_RANK = {status: rank for rank, status in enumerate(_CHAIN)}


class StatusTransition(Enum):
    """What a registry must do for a permitted status change."""

    NOOP = "noop"  # the status is already the target: change nothing, bump nothing
    MOVE = "move"  # set it
    VALIDATE = "validate"  # DRAFT -> VALIDATED: set it only if the registration's checks pass


def status_transition(current: ToolStatus, target: ToolStatus) -> StatusTransition:
    """Decide whether ``current -> target`` is allowed; ``ValueError`` if not.

    The rules: setting the current status is a no-op; RETIRED is final; a DRAFT
    version moves only to VALIDATED, and only through the checks (the schema is
    valid, the tool is bound), which the caller runs on ``VALIDATE``; from
    VALIDATED on any forward move along the chain is allowed, skipping steps;
    DISABLED -> ACTIVE re-enables; every other move (backwards) is refused.
    The function changes nothing, so a refused move leaves the version as it was.
    """
    if not isinstance(current, ToolStatus) or not isinstance(target, ToolStatus):
        raise TypeError(f"statuses must be ToolStatus members, got {current!r} -> {target!r}")
    if current is target:
        return StatusTransition.NOOP
    if current is ToolStatus.RETIRED:
        raise ValueError(f"a RETIRED version is final; cannot move it to {target.name}")
    if current is ToolStatus.DRAFT:
        if target is ToolStatus.VALIDATED:
            return StatusTransition.VALIDATE
        raise ValueError(f"a DRAFT version moves only to VALIDATED (through the checks), not to {target.name}")
    if current is ToolStatus.DISABLED and target is ToolStatus.ACTIVE:
        return StatusTransition.MOVE
    if _RANK[target] > _RANK[current]:
        return StatusTransition.MOVE
    raise ValueError(f"cannot move a tool version back from {current.name} to {target.name}")
