"""The session log's records: event kinds, :class:`SessionEvent`, fingerprints, errors.

A session's log is append-only. Each event carries a sequence number that only
grows (``seq``), the turn and step it belongs to, its kind, the call id it is
about (tool events only) and a JSON payload. Events are keyed by
(session, turn, step, call id), and tool events also by the call's position in
the model's proposal (``payload["index"]``), so a provider that reuses call ids
across steps, or even inside one step, never makes one call's result answer another.
A child call (one a tool body made) has no ``index``: its events carry its key
under the step instead (``payload["child"]``, ``"<index of the model's call>/<n>"``),
starting with ``tool/ptc-dispatch``. ``user/message`` events carry the additional
contexts of a step's calls, after its last ``tool/result``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final, Literal

from tether_clr.foundations.errors import TetherError
from tether_clr.records.suspension import call_fingerprint

__all__ = [
    "ASSISTANT_MESSAGE",
    "APPROVAL_ASKED",
    "APPROVAL_DECIDED",
    "APPROVAL_GRANT",
    "APPROVAL_REVOKE",
    "Durability",
    "EVENT_KINDS",
    "PTC_DISPATCH",
    "STEP_END",
    "STEP_START",
    "SessionEvent",
    "SessionLeasedError",
    "TOOL_ATTEMPT",
    "TOOL_CALL",
    "TOOL_RESULT",
    "TURN_END",
    "TURN_START",
    "USER_MESSAGE",
    "call_fingerprint",
]

TURN_START: Final = "turn/start"
STEP_START: Final = "step/start"
ASSISTANT_MESSAGE: Final = "assistant/message"
PTC_DISPATCH: Final = "tool/ptc-dispatch"
TOOL_CALL: Final = "tool/call"
APPROVAL_ASKED: Final = "approval/asked"
APPROVAL_DECIDED: Final = "approval/decided"
APPROVAL_GRANT: Final = "approval/grant"  # a remembered answer (see tether_clr.recording.session.grants)
APPROVAL_REVOKE: Final = "approval/revoke"  # a grant ended by store.revoke_grant: no step, any turn
TOOL_ATTEMPT: Final = "tool/attempt"
TOOL_RESULT: Final = "tool/result"
USER_MESSAGE: Final = "user/message"
STEP_END: Final = "step/end"
TURN_END: Final = "turn/end"

EVENT_KINDS: Final = (
    TURN_START,
    STEP_START,
    ASSISTANT_MESSAGE,
    PTC_DISPATCH,
    TOOL_CALL,
    APPROVAL_ASKED,
    APPROVAL_DECIDED,
    APPROVAL_GRANT,
    APPROVAL_REVOKE,
    TOOL_ATTEMPT,
    TOOL_RESULT,
    USER_MESSAGE,
    STEP_END,
    TURN_END,
)

Durability = Literal["full", "process"]
"""``full``: every commit reaches the disk before it returns (survives power loss);
``process``: a commit survives the crash of the writing process, not of the machine."""


@dataclass(frozen=True, slots=True)
class SessionEvent:
    """One event of a session's log, as stored.

    ``step`` is None for turn events; ``call_id`` is None except for tool and
    approval events. ``payload`` is a fresh dict on every read of the log (the
    stored text is the record). ``at`` is the UTC time the writer built the event.
    """

    seq: int
    session_id: str
    turn: int
    step: int | None
    kind: str
    call_id: str | None
    payload: dict[str, Any]
    at: datetime


class SessionLeasedError(TetherError):
    """Another writer holds a live lease on the session: nothing was changed.

    Raised by :meth:`SessionStore.repair` while a writer that may still be
    running holds the session, and by a sink whose session another writer holds.
    """

    def __init__(self, session_id: str, holder: str | None = None, expires_in: float | None = None) -> None:
        detail = "" if expires_in is None else f" (for {max(expires_in, 0.0):.2f} s more unless renewed)"
        super().__init__(f"session {session_id!r} is leased by a live writer{detail}")
        self.session_id = session_id
        self.holder = holder
        self.expires_in = expires_in
