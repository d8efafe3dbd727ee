"""The session log's invariants about remembered approval answers (grants), for :func:`~tether_clr.log_violations`.

* an ``approval/grant`` is a well-formed grant of this session, with an id no
  other grant has, and follows the provider's "always" answer for the same call
  (an ``approval/decided`` with ``always`` equal to its scope and the same decision);
* an ``approval/decided`` taken from a grant names a grant that precedes it,
  was not revoked before it, has the same decision, and (session scope) belongs
  to this session. A principal's grant given in another session is checked when
  that session's grant events are passed too (``tether-clr log verify`` passes
  every session's); otherwise only its own fields are;
* an ``approval/revoke`` ends a grant of this log that precedes it, once.

Sequence numbers grow across every session of a store, so "precedes" holds
across logs too.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tether_clr.recording.session.events import APPROVAL_DECIDED, APPROVAL_GRANT, APPROVAL_REVOKE, SessionEvent
from tether_clr.recording.session.grants import GrantRecord
from tether_clr.records.grants import GrantScope

if TYPE_CHECKING:
    from tether_clr.recording.session.protocol import SessionStore

__all__ = ["grant_events", "grant_violations", "stored_grant_events"]


def grant_events(events: Iterable[SessionEvent]) -> list[SessionEvent]:
    """The ``approval/grant`` and ``approval/revoke`` events among ``events`` (what other logs lend a check)."""
    return [event for event in events if event.kind in (APPROVAL_GRANT, APPROVAL_REVOKE)]


async def stored_grant_events(store: SessionStore) -> list[SessionEvent]:
    """The grant and revoke events of every session of ``store`` that holds a grant (for a store-wide check)."""
    holders = sorted({grant.session_id for grant in await store.grants(include_revoked=True)})
    return [event for session in holders for event in grant_events(await store.events(session))]


def _where(event: SessionEvent) -> str:
    return f"seq {event.seq} ({event.kind}, turn {event.turn}, step {event.step}, call {event.call_id!r})"


def grant_violations(events: Sequence[SessionEvent], others: Sequence[SessionEvent] = ()) -> list[str]:
    """Every broken grant invariant of one session's log (payloads already JSON objects); ``others``:
    grant and revoke events of other sessions, which this log's decisions may refer to."""
    if not any(event.kind in (APPROVAL_GRANT, APPROVAL_REVOKE) or "grant" in event.payload for event in events):
        return []
    problems: list[str] = []
    session = events[0].session_id
    grants: dict[str, tuple[SessionEvent, GrantRecord]] = {}
    revoked: dict[str, int] = {}  # grant id -> seq of its revocation
    for event in [*others, *events]:
        if event.kind == APPROVAL_GRANT:
            try:
                grant = GrantRecord.from_payload(event.payload, event.seq)
            except ValueError as exc:
                if event.session_id == session:
                    problems.append(f"{_where(event)}: {exc}")
                continue
            if grant.grant_id in grants and event.session_id == session:
                problems.append(f"{_where(event)}: grant id {grant.grant_id!r} is used twice")
            grants.setdefault(grant.grant_id, (event, grant))
        elif event.kind == APPROVAL_REVOKE and isinstance(event.payload.get("grant_id"), str):
            revoked.setdefault(event.payload["grant_id"], event.seq)
    decided: dict[tuple[int, int | None, object], SessionEvent] = {}
    for event in events:
        if event.kind == APPROVAL_DECIDED:
            decided[(event.turn, event.step, _call_key(event))] = event
            if "grant" in event.payload:
                problems.extend(_from_grant(event, session, grants, revoked, checkable=bool(others)))
        elif event.kind == APPROVAL_GRANT and event.payload.get("grant_id") in grants:
            event_, grant = grants[event.payload["grant_id"]]
            if event_ is not event:
                continue
            if grant.session_id != session:
                problems.append(f"{_where(event)}: the grant names session {grant.session_id!r}")
            answer = decided.get((event.turn, event.step, _call_key(event)))
            if answer is None or answer.payload.get("always") != grant.scope.value or answer.payload.get("decision") != grant.decision.value:
                problems.append(f"{_where(event)}: no \"always\" answer of the same decision and scope precedes the grant")
        elif event.kind == APPROVAL_REVOKE:
            grant_id = str(event.payload.get("grant_id"))
            found = grants.get(grant_id)
            if found is None or found[1].session_id != session or found[0].seq >= event.seq:
                problems.append(f"{_where(event)}: revokes no earlier grant of this session ({grant_id!r})")
            elif revoked.get(grant_id) != event.seq:
                problems.append(f"{_where(event)}: grant {grant_id!r} is revoked twice")
    return problems


def _call_key(event: SessionEvent) -> object:
    """Which call of its step an approval event is about: a child call's key, else the model's position."""
    child = event.payload.get("child")
    return ("child", child) if isinstance(child, str) else event.payload.get("index")


def _from_grant(
    event: SessionEvent, session: str, grants: dict[str, tuple[SessionEvent, GrantRecord]], revoked: dict[str, int], checkable: bool
) -> list[str]:
    grant_id, grant_session = event.payload.get("grant"), event.payload.get("grant_session")
    found = grants.get(grant_id) if isinstance(grant_id, str) else None
    if found is None:
        if grant_session == session or checkable:
            return [f"{_where(event)}: decided from grant {grant_id!r}, which is in no log checked"]
        return []  # a principal's grant given in another session that was not passed: nothing more to check
    grant_event, grant = found
    if grant_event.seq >= event.seq:
        return [f"{_where(event)}: decided from grant {grant_id!r}, which comes after it"]
    if grant_id in revoked and revoked[grant_id] < event.seq:
        return [f"{_where(event)}: decided from grant {grant_id!r}, revoked before it (seq {revoked[grant_id]})"]
    if event.payload.get("decision") != grant.decision.value:
        return [f"{_where(event)}: decided {event.payload.get('decision')!r} from grant {grant_id!r}, which says {grant.decision.value!r}"]
    if grant.session_id != session and grant.scope is not GrantScope.PRINCIPAL:
        return [f"{_where(event)}: decided from grant {grant_id!r} of session {grant.session_id!r}, which only holds there"]
    return []
