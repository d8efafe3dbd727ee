"""The store's refusals, shared by both dialects: a lost lease, a step that may not start,
a session whose step waits for an approval decision."""

from __future__ import annotations

from typing import NoReturn

from tether_clr.recording.session.events import (
    STEP_START,
    TURN_END,
    TURN_START,
    SessionLeasedError,
)

__all__ = ["LostLease", "check_new_step", "raise_lost_lease", "raise_suspended"]


class LostLease(Exception):
    """The cause of a SessionLeasedError raised to a writer whose lease was taken over."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f"the writer's lease on session {session_id!r} was taken over (it was presumed dead)")


def raise_lost_lease(session_id: str, holder: str | None) -> NoReturn:
    """Refuse a write whose writer no longer holds the session's lease (``holder`` holds it now, if anyone)."""
    raise SessionLeasedError(session_id, holder) from LostLease(session_id)


def check_new_step(session_id: str, turn: int, step: int | None, kinds: set[str]) -> None:
    """Raise ValueError unless a step may start: ``kinds`` are the turn's turn/start, turn/end and this step's step/start found."""
    if TURN_START not in kinds:
        raise ValueError(f"session {session_id!r} has no turn {turn} (call begin_turn first)")
    if TURN_END in kinds:
        raise ValueError(f"turn {turn} of session {session_id!r} has ended")
    if STEP_START in kinds:
        raise ValueError(f"step {step} of turn {turn} of session {session_id!r} was already started")


def raise_turn_restarted(session_id: str, turn: int) -> NoReturn:
    """Refuse a ``turn/start`` written with its first step for a turn the log already has (a writer whose
    idea of its last turn is stale): nothing is written, the log never holds one turn started twice."""
    raise ValueError(f"turn {turn} of session {session_id!r} was already started")


def raise_suspended(session_id: str, what: str, turn: int, step: int, call_id: str | None) -> NoReturn:
    """Refuse to start ``what`` (a step or a turn) while call ``call_id`` of ``turn``, ``step`` waits for a decision."""
    raise ValueError(
        f"cannot start {what} of session {session_id!r}: call {call_id!r} of turn {turn}, step {step} "
        "waits for an approval decision (resume or cancel_suspended it first)"
    )
