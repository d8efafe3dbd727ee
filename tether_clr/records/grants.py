"""Remembered approval answers ("always allow"): the grant scope, a provider's answer with a scope, what a grant matches.

An approval provider may answer ``ApprovalResult.APPROVED_ALWAYS`` or
``REJECTED_ALWAYS`` (a grant for this session), or an :class:`ApprovalGrant`
that names the scope: :attr:`GrantScope.SESSION` or :attr:`GrantScope.PRINCIPAL`.
The call is decided as ``APPROVED`` or ``REJECTED`` would decide it, and, when
the batch records into a session store, the answer is remembered as a grant
(an ``approval/grant`` event) keyed by :class:`GrantKey` (the tool's logical
name, major version and schema hash) and by the request's tenant and principal.
Later asks that match are decided from the grant, without asking.

A grant never matches another tool version's schema: a changed schema is a
different question and asks again. Nothing is remembered where nothing can hold
it (no session store, or no request context to say who answered), so the
answer then decides the one call only. Floor 2 (records).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Any

from tether_clr.records.decisions import ApprovalResult

__all__ = ["ApprovalGrant", "GrantKey", "GrantScope", "grant_of", "plain_result"]


class GrantScope(Enum):
    """Where a remembered answer applies: the session it was given in, or every session of the principal (in its tenant)."""

    SESSION = "session"
    PRINCIPAL = "principal"


_PLAIN = {
    ApprovalResult.APPROVED_ALWAYS: ApprovalResult.APPROVED,
    ApprovalResult.REJECTED_ALWAYS: ApprovalResult.REJECTED,
    ApprovalResult.APPROVED: ApprovalResult.APPROVED,
    ApprovalResult.REJECTED: ApprovalResult.REJECTED,
}


@dataclass(frozen=True, slots=True)
class ApprovalGrant:
    """A provider's answer that is to be remembered: ``result`` (``APPROVED_ALWAYS`` or ``REJECTED_ALWAYS``;
    plain ``APPROVED``/``REJECTED`` are read as those) and the ``scope`` it applies in.

    ``ApprovalGrant.approve(GrantScope.PRINCIPAL)`` approves this call and every
    later one of the same tool version and schema for the principal, in any of
    its sessions within its tenant, until the grant is revoked
    (:meth:`~tether_clr.SessionStore.revoke_grant`).
    """

    result: ApprovalResult
    scope: GrantScope = GrantScope.SESSION

    def __post_init__(self) -> None:
        if self.result not in _PLAIN:
            raise ValueError(f"an ApprovalGrant approves or rejects, got {self.result!r}")
        if not isinstance(self.scope, GrantScope):
            raise TypeError(f"scope must be a GrantScope, got {type(self.scope).__name__}")
        object.__setattr__(self, "result", ApprovalResult.APPROVED_ALWAYS if self.approves else ApprovalResult.REJECTED_ALWAYS)

    @classmethod
    def approve(cls, scope: GrantScope = GrantScope.SESSION) -> ApprovalGrant:
        return cls(ApprovalResult.APPROVED_ALWAYS, scope)

    @classmethod
    def reject(cls, scope: GrantScope = GrantScope.SESSION) -> ApprovalGrant:
        return cls(ApprovalResult.REJECTED_ALWAYS, scope)

    @property
    def approves(self) -> bool:
        return _PLAIN[self.result] is ApprovalResult.APPROVED

    @property
    def decision(self) -> ApprovalResult:
        """The answer for the call itself: ``APPROVED`` or ``REJECTED``."""
        return _PLAIN[self.result]


@dataclass(frozen=True, slots=True)
class GrantKey:
    """What a grant is about: the tool's logical name, its major version, and the hash of its parameters schema."""

    tool: str
    major: int
    schema_hash: str


def grant_of(result: object) -> ApprovalGrant | None:
    """The grant a provider's answer asks to remember (``*_ALWAYS``: this session), or None for any other answer."""
    if isinstance(result, ApprovalGrant):
        return result
    if result is ApprovalResult.APPROVED_ALWAYS or result is ApprovalResult.REJECTED_ALWAYS:
        return ApprovalGrant(result)
    return None


def plain_result(result: Any) -> Any:
    """The answer for the call itself: an ``*_ALWAYS`` answer or an :class:`ApprovalGrant` as ``APPROVED``/``REJECTED``;
    anything else unchanged (an invalid answer stays invalid and fails closed where it is read)."""
    if isinstance(result, ApprovalGrant):
        return result.decision
    if result is ApprovalResult.APPROVED_ALWAYS or result is ApprovalResult.REJECTED_ALWAYS:
        return _PLAIN[result]
    return result
