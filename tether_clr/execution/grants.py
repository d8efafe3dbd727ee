"""Remembered approval answers in a batch: consult the sink's grants before asking, remember ``*_ALWAYS`` answers.

The execution layer only sees the sink's two optional hooks
(:class:`~tether_clr.execution.ports.SinkHooks`: ``approval_from_grant`` and
``approval_granted``); where grants are stored and how they are looked up is the
session store's business (layer 5). A batch whose sink lacks them asks every
time, and an ``*_ALWAYS`` answer decides the one call only.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from tether_clr.foundations.incidents import IncidentLog
from tether_clr.records.grants import GrantKey, grant_of
from tether_clr.records.outcomes import ToolExecution

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.execution.hooks import HookSet
    from tether_clr.execution.ports import ApprovalProvider

__all__ = ["APPROVAL_INCIDENTS", "GrantingApproval", "approval_request", "grant_key"]

APPROVAL_INCIDENTS = IncidentLog(
    logging.getLogger("tether_clr"), "the approval provider raised; calls needing approval are refused approval_unavailable"
)
"""An approval provider that raises (its service is down) fails every call that needs it: the pipeline logs
that once per incident (with the traceback), sums it up every 30 s, and closes it at the next answer."""

ApprovalRequest = Callable[[ToolExecution, "str | None"], Awaitable[Any]]


def grant_key(entry: ToolEntry) -> GrantKey:
    """What a grant for this tool version is about: logical name, major version, schema hash."""
    candidate = entry.candidate
    return GrantKey(candidate.logical_name, candidate.semver.major, candidate.schema_hash)


class GrantingApproval:
    """A batch's approval provider when its sink holds grants (:attr:`HookSet.holds_grants`).

    For a call of ``entry`` (:meth:`request_for`): a live grant matching the
    call decides it (the sink records ``approval/decided`` naming the grant) and
    the provider is not asked; otherwise the provider is asked, and an
    ``*_ALWAYS`` answer or an :class:`~tether_clr.ApprovalGrant` is recorded as a
    grant. ``tell(hook, execution, value, what, *more)`` calls one hook and
    returns what it returned; it raises :class:`~tether_clr.SinkError` when the
    sink failed (the batch is then aborting), so the call is refused, never run.
    """

    def __init__(self, provider: ApprovalProvider, hooks: HookSet, tell: Callable[..., Awaitable[Any]]) -> None:
        self._provider = provider
        self._hooks = hooks
        self._tell = tell

    async def request(self, execution: ToolExecution, reason: str | None) -> Any:
        """Ask the provider, remembering nothing (a call with no resolved tool to key a grant by)."""
        return await self._provider.request(execution, reason)

    def request_for(self, entry: ToolEntry) -> ApprovalRequest:
        key = grant_key(entry)

        async def request(execution: ToolExecution, reason: str | None) -> Any:
            remembered = await self._tell(self._hooks.from_grant, execution, key, "decision from a grant")
            if remembered is not None:
                return remembered
            result = await self._provider.request(execution, reason)
            grant = grant_of(result)
            if grant is not None:
                await self._tell(self._hooks.granted, execution, key, "grant", grant)
            return result

        return request


def approval_request(provider: ApprovalProvider, entry: ToolEntry | None) -> ApprovalRequest:
    """The request to put a call of ``entry`` to ``provider``: through its grants when it has them."""
    if entry is not None and isinstance(provider, GrantingApproval):
        return provider.request_for(entry)
    return provider.request
