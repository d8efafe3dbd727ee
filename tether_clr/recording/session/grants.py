"""Remembered approval answers in a session store: the grant record, its events, its index, lookup and revocation.

A grant is an ``approval/grant`` event in the log of the session it was given
in (written by the step's sink after the provider's ``*_ALWAYS`` answer). The
store indexes it, in the same transaction, in its ``approval_grants`` table
(keyed by the event's ``seq``), so a principal's grants can be found from any
of its sessions without reading every log. The event is the record; the table
only finds it.

A grant matches a later call when all of these are equal: the tenant and the
principal of the request (a grant never crosses tenants, nor principals), the
tool's logical name, major version and schema hash, and, for
:attr:`~tether_clr.GrantScope.SESSION`, the session. The latest live grant
that matches decides. :meth:`~tether_clr.SqliteSessionStore.revoke_grant`
ends a grant, writing ``approval/revoke`` into the grant's session log (no
step, at its latest turn) and marking the index in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tether_clr.recording.session.encoding import PendingEvent, dumps
from tether_clr.recording.session.events import APPROVAL_GRANT, APPROVAL_REVOKE
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.grants import ApprovalGrant, GrantKey, GrantScope
from tether_clr.records.outcomes import ToolExecution

__all__ = ["GrantRecord", "Insert", "find_grant", "index_grants", "list_grants", "new_grant", "revoke_grant"]

Execute = Callable[[str, tuple[Any, ...]], list[tuple[Any, ...]]]
Insert = Callable[[Execute, str, Sequence[PendingEvent]], None]

_DECISIONS = {"approved": ApprovalResult.APPROVED, "rejected": ApprovalResult.REJECTED}


@dataclass(frozen=True, slots=True)
class GrantRecord:
    """One remembered answer, as a session store holds it.

    ``decision`` is ``APPROVED`` or ``REJECTED``; ``seq`` is the sequence number
    of its ``approval/grant`` event (None until that event is committed);
    ``revoked_seq`` that of the ``approval/revoke`` that ended it, if any.
    """

    grant_id: str
    tenant_id: str
    principal_id: str
    session_id: str
    scope: GrantScope
    tool: str
    major: int
    schema_hash: str
    decision: ApprovalResult
    seq: int | None = None
    revoked_seq: int | None = None

    @property
    def key(self) -> GrantKey:
        return GrantKey(self.tool, self.major, self.schema_hash)

    @property
    def revoked(self) -> bool:
        return self.revoked_seq is not None

    def matches(self, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> bool:
        """Whether this grant decides a call of ``key`` by that tenant and principal in that session."""
        return (
            not self.revoked
            and (self.tenant_id, self.principal_id, self.key) == (tenant_id, principal_id, key)
            and (self.scope is GrantScope.PRINCIPAL or self.session_id == session_id)
        )

    def payload(self) -> dict[str, Any]:
        """The grant's fields as an ``approval/grant`` event records them."""
        return {
            "grant_id": self.grant_id, "tenant_id": self.tenant_id, "principal_id": self.principal_id,
            "session_id": self.session_id, "scope": self.scope.value, "tool": self.tool, "major": self.major,
            "schema_hash": self.schema_hash, "decision": self.decision.value,
        }  # fmt: skip

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any], seq: int | None = None) -> GrantRecord:
        """Read an ``approval/grant`` event's payload back; ValueError when a field is missing or wrong."""
        try:
            texts = [payload[name] for name in ("grant_id", "tenant_id", "principal_id", "session_id", "tool", "schema_hash")]
            major, scope, decision = payload["major"], GrantScope(payload["scope"]), _DECISIONS[payload["decision"]]
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"not a grant: {exc!r}") from None
        if not all(isinstance(text, str) and text for text in texts) or isinstance(major, bool) or not isinstance(major, int):
            raise ValueError("not a grant: a text field is empty or not text, or the major version is not an int")
        grant_id, tenant_id, principal_id, session_id, tool, schema_hash = texts
        return cls(grant_id, tenant_id, principal_id, session_id, scope, tool, major, schema_hash, decision, seq)


def new_grant(grant_id: str, session_id: str, execution: ToolExecution, key: GrantKey, grant: ApprovalGrant) -> GrantRecord | None:
    """The grant a provider's ``*_ALWAYS`` answer makes, or None when the request names nobody (no request context)."""
    context = execution.context
    if context is None:
        return None
    return GrantRecord(
        grant_id, context.tenant_id, context.principal_id, session_id, grant.scope,
        key.tool, key.major, key.schema_hash, grant.decision,
    )  # fmt: skip


# ------------------------------------------------------------------- SQL (inside a store's transaction)
_COLUMNS = "grant_id, seq, tenant_id, principal_id, session_id, scope, tool, major, schema_hash, decision, revoked_seq"


def _record(row: tuple[Any, ...]) -> GrantRecord:
    grant_id, seq, tenant, principal, session, scope, tool, major, schema, decision, revoked = row
    return GrantRecord(
        grant_id, tenant, principal, session, GrantScope(scope), tool, int(major), schema, _DECISIONS[decision],
        int(seq), None if revoked is None else int(revoked),
    )  # fmt: skip


def index_grants(execute: Execute, session_id: str, rows: Sequence[PendingEvent]) -> None:
    """Index the ``approval/grant`` events among ``rows``, just inserted, with their sequence numbers."""
    for row in rows:
        if row.kind != APPROVAL_GRANT:
            continue
        grant = GrantRecord.from_payload(json.loads(row.payload))
        if grant.session_id != session_id:
            raise ValueError(f"grant {grant.grant_id!r} names session {grant.session_id!r} but is logged in {session_id!r}")
        execute(
            f"INSERT INTO approval_grants ({_COLUMNS}) SELECT ?, MAX(seq), ?, ?, ?, ?, ?, ?, ?, ?, NULL FROM session_events "
            # A child call's events have no position: its (unique) child call id finds them.
            "WHERE session_id = ? AND turn = ? AND step = ? AND (position = ? OR (position IS NULL AND call_id = ?)) AND kind = ?",
            (
                grant.grant_id, grant.tenant_id, grant.principal_id, session_id, grant.scope.value, grant.tool, grant.major,
                grant.schema_hash, grant.decision.value, session_id, row.turn, row.step, row.position, row.call_id, APPROVAL_GRANT,
            ),
        )  # fmt: skip


def find_grant(execute: Execute, tenant_id: str, principal_id: str, session_id: str, key: GrantKey) -> GrantRecord | None:
    """The latest live grant that decides a call of ``key`` by that tenant and principal in that session."""
    rows = execute(
        f"SELECT {_COLUMNS} FROM approval_grants WHERE tenant_id = ? AND principal_id = ? AND tool = ? AND major = ? "
        "AND schema_hash = ? AND revoked_seq IS NULL AND (scope = ? OR session_id = ?) ORDER BY seq DESC LIMIT 1",
        (tenant_id, principal_id, key.tool, key.major, key.schema_hash, GrantScope.PRINCIPAL.value, session_id),
    )
    return _record(rows[0]) if rows else None


def list_grants(
    execute: Execute, tenant_id: str | None, principal_id: str | None, session_id: str | None, include_revoked: bool
) -> list[GrantRecord]:
    """The grants that fit every filter given (None: any), oldest first."""
    conditions, params = [], []
    for column, value in (("tenant_id", tenant_id), ("principal_id", principal_id), ("session_id", session_id)):
        if value is not None:
            conditions.append(f"{column} = ?")
            params.append(value)
    if not include_revoked:
        conditions.append("revoked_seq IS NULL")
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return [_record(row) for row in execute(f"SELECT {_COLUMNS} FROM approval_grants{where} ORDER BY seq", tuple(params))]


def revoke_grant(execute: Execute, insert: Insert, grant_id: str, reason: str | None) -> bool:
    """End a live grant: ``approval/revoke`` in its session's log (latest turn, no step), and the index marked.

    False, writing nothing, when no live grant has that id.
    """
    rows = execute(f"SELECT {_COLUMNS} FROM approval_grants WHERE grant_id = ? AND revoked_seq IS NULL", (grant_id,))
    if not rows:
        return False
    grant = _record(rows[0])
    ((turn,),) = execute("SELECT MAX(turn) FROM session_events WHERE session_id = ?", (grant.session_id,))
    payload = {**grant.payload(), "grant_seq": grant.seq, "reason": reason}
    insert(execute, grant.session_id, [PendingEvent(int(turn), None, APPROVAL_REVOKE, None, None, dumps(payload))])
    execute(
        "UPDATE approval_grants SET revoked_seq = (SELECT MAX(seq) FROM session_events WHERE session_id = ? AND kind = ?) "
        "WHERE grant_id = ?",
        (grant.session_id, APPROVAL_REVOKE, grant_id),
    )
    return True
