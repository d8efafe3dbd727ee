"""The session store's public protocol: what a host, a sink and the resumer use.

Both stores implement it (:class:`~tether_clr.SqliteSessionStore`,
:class:`~tether_clr.PostgresSessionStore`); so may any other. Writing goes
through a lease: :meth:`SessionStore.claim` takes one and reads the log in one
transaction, :meth:`SessionStore.append` commits events under it (taking it on
a writer's first commit, releasing it on its last), :meth:`SessionStore.release`
frees it. The step sink (:class:`~tether_clr.SessionSink`) and resuming a
suspended step use nothing else, so any store with this protocol can be resumed.
Remembered approval answers (grants) are indexed by the store from the
``approval/grant`` events it is given, and found with :meth:`SessionStore.find_grant`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tether_clr.execution.ports import SinkHooks, ToolCallSink
from tether_clr.recording.session.encoding import PendingEvent
from tether_clr.recording.session.events import Durability, SessionEvent
from tether_clr.recording.session.grants import GrantRecord
from tether_clr.records.grants import GrantKey

__all__ = ["SessionClaim", "SessionStore", "StepSink"]


@dataclass(frozen=True, slots=True)
class SessionClaim:
    """A session's lease taken by ``holder``, and its log as read in the same transaction."""

    session_id: str
    holder: str
    events: tuple[SessionEvent, ...]


class StepSink(ToolCallSink, SinkHooks, Protocol):
    """The batch sink of one step (:class:`~tether_clr.SessionSink`): every optional hook, and :meth:`abandon`."""

    async def abandon(self) -> None:
        """Release the lease of a sink whose batch never finished (nothing when it finished or never wrote)."""
        ...


class SessionStore(Protocol):
    """Where sessions are logged. :class:`SqliteSessionStore` and :class:`PostgresSessionStore` implement it.

    ``lease_seconds``: how long a session stays leased after its writer's last
    renewal; ``durability``: ``"full"`` or ``"process"``; ``group_commit``:
    whether a step's sink buffers its events up to each durability point.
    """

    lease_seconds: float
    durability: Durability
    group_commit: bool

    async def begin_turn(self, session_id: str, note: Mapping[str, Any] | None = None) -> int: ...

    async def end_turn(self, session_id: str, turn: int) -> None: ...

    def sink(self, session_id: str, turn: int, step: int, *, claim: SessionClaim | None = None) -> StepSink:
        """The sink of one step; with ``claim``, the sink that continues that suspended step under the claim's lease."""
        ...

    async def events(self, session_id: str) -> list[SessionEvent]: ...

    async def sessions(self) -> list[str]: ...

    async def repair(self, session_id: str) -> int: ...

    async def claim(self, session_id: str) -> SessionClaim:
        """Take the session's lease for a new holder and read its log, in one transaction; the lease
        is renewed until released. :class:`~tether_clr.SessionLeasedError` while another writer holds it."""
        ...

    async def append(
        self, session_id: str, holder: str, events: Sequence[PendingEvent], *, first: bool, release: bool
    ) -> None:
        """Commit ``events`` in order in one transaction that checks ``holder``'s lease (``first``:
        takes it) and, on ``release``, frees it; all or nothing."""
        ...

    async def release(self, session_id: str, holder: str) -> None:
        """Free ``holder``'s lease on the session (nothing if it no longer holds it)."""
        ...

    async def find_grant(self, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> GrantRecord | None:
        """The latest live grant deciding a call of ``key`` by that tenant and principal in that session: one of
        the session's own grants, or one of the principal's (any session of the same tenant); None to ask."""
        ...

    async def grants(
        self, *, tenant_id: str | None = None, principal_id: str | None = None, session_id: str | None = None,
        include_revoked: bool = False,
    ) -> list[GrantRecord]:
        """The grants that fit every filter given, oldest first."""
        ...

    async def revoke_grant(self, grant_id: str, reason: str | None = None) -> bool:
        """End a live grant (recorded as ``approval/revoke``); False when no live grant has that id."""
        ...

    def close(self) -> None: ...
