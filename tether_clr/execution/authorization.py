"""Authorization before the body: the pre-execute waterfall, approval, guards, and the last
re-authorization against the live catalog right before the body starts. Floor 4."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from tether_clr.catalog.authority import AuthorityUnavailableError
from tether_clr.execution.grants import APPROVAL_INCIDENTS, approval_request
from tether_clr.execution.stages import ApprovalRequest, StageBase, fail, reraise_unless_contained
from tether_clr.execution.waterfalls import pre_checked, pre_next
from tether_clr.foundations.cancellation import cancel_scope_for
from tether_clr.foundations.text import describe_exception, safe_repr
from tether_clr.records.decisions import ApprovalResult, ToolPreDecision
from tether_clr.records.grants import plain_result
from tether_clr.records.outcomes import ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.suspension import PendingApproval, call_fingerprint

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.execution.observing import ObservedCall

__all__ = ["Authorization"]

_ALLOW = ToolPreDecision.allow()  # a constant: allow() always returns this one

logger = logging.getLogger("tether_clr")


_REFUSALS: dict[str, str] = {
    "tool_disabled": "{tool} is disabled",
    "tool_retired": "{tool} is retired",
    "tenant_denied": "tenant {tenant!r} may no longer call {tool}",
    "scope_revoked": "the principal no longer holds the scopes {tool} requires",
    "deny_rule": "a deny rule refuses {tool}",
    "stale_binding": "the version of {tool} this request was bound to no longer exists",
    "kill_switch": "a kill switch stops {tool}",
}


def _refusal(execution: ToolExecution, entry: ToolEntry, reason: str) -> ToolExecutionOutcome:
    tool = f"tool {entry.name!r} {entry.candidate.version}"
    if reason == "control_stale":  # nothing this host knows of the shared control plane can be trusted now
        message = f"the catalog control plane has not been reached recently enough to run {tool}"
        return fail(execution, Codes.UNAVAILABLE, message, reason)
    tenant = None if execution.context is None else execution.context.tenant_id
    message = _REFUSALS[reason].format(tool=tool, tenant=tenant)
    return fail(execution, Codes.DENIED, f"re-authorization refused the call: {message}", reason)


def _requires_approval(entry: ToolEntry, execution: ToolExecution) -> bool:
    """Any answer but an exact ``False`` from a tool's approval predicate, raising included, means yes."""
    for predicate in entry.approval:
        try:
            if predicate(execution.arguments) is not False:
                return True
        except Exception:
            logger.warning("approval predicate of %r raised; approval is required", execution.name, exc_info=True)
            return True
    return False

class Authorization(StageBase):
    """The pre-execute waterfall, approval and guards (:meth:`authorize`), and :meth:`reauthorize`."""

    __slots__ = ()

    async def authorize(
        self, execution: ToolExecution, entry: ToolEntry | None = None, decided: ApprovalRequest | None = None,
        observed: ObservedCall | None = None,
    ) -> ToolExecutionOutcome | PendingApproval | None:
        """Pre-execute waterfall, approval, then guards. None means: may dispatch.

        A tool that requires approval (``entry.approval``) goes through the same
        approval step as a pre-execute ``ask``, once: a call both asked about and
        requiring approval is put to the provider one time. Approved calls still
        face the guards. A :class:`PendingApproval` means the provider answered
        ``DEFERRED``: the call is parked, nothing more may run for it now.

        ``decided`` answers the approval step instead of the provider (a resumed
        step: the decision was taken while the step was suspended); the call then
        goes through it even if nothing asks any more, so a decision that was
        ``REJECTED`` can never be skipped. ``observed``: the call's instrumentation
        (:mod:`~tether_clr.execution.observing`), told each stage and the approval wait.
        """
        if observed is not None:
            observed.stage = "pre_execute"
        chain = self._chain("pre_execute", execution.scope)
        try:  # no waterfall to build without listeners: the end of an empty chain allows
            decision = _ALLOW if not chain else pre_checked(await chain[0](execution, pre_next(chain, 0, execution)))
        except BaseException as exc:
            reraise_unless_contained(exc)
            return fail(execution, Codes.TOOL_ERROR, f"pre-execute listener failed: {describe_exception(exc)}")
        reason: str | None = None
        if decision is not _ALLOW:  # the usual answer, ToolPreDecision.allow(), needs no look at its kind
            if decision.is_deny:
                return fail(execution, Codes.DENIED, decision.reason or "denied by a pre-execute listener")
            if decision.is_ask:
                reason = decision.reason or ""  # "" too: the call is asked about, whatever the tool says
            elif not decision.is_allow:
                return fail(execution, Codes.TOOL_ERROR, f"pre-execute listener returned an unknown decision {safe_repr(decision.kind)}")
        if reason is None and entry is not None and entry.approval and _requires_approval(entry, execution):
            reason = f"tool {execution.name!r} requires approval"
        if reason is not None or decided is not None:
            if observed is not None:
                observed.stage = "approval"
            refusal = await self._approve(execution, reason or None, decided, entry, observed)
            if refusal is not None:
                return refusal
        if observed is not None:
            observed.stage = "guard"
        return self._guards(execution)

    async def _approve(
        self, execution: ToolExecution, reason: str | None, decided: ApprovalRequest | None = None, entry: ToolEntry | None = None,
        observed: ObservedCall | None = None,
    ) -> ToolExecutionOutcome | PendingApproval | None:
        asked = f" ({reason})" if reason else ""
        request = decided  # a decision taken while the step was suspended: nobody is asked now
        if request is None:
            if self._approval is None:
                return fail(execution, Codes.DENIED, f"approval required{asked} but no approval provider is configured")
            scope = execution.scope
            if scope is None or (scope.session is None and scope.session_id is None) or scope.owner is None:
                return fail(execution, Codes.DENIED, f"approval required{asked} but the scope has no session or owner to ask")
            request = approval_request(self._approval, entry)  # through the sink's grants, when it holds them
        token = execution.cancellation
        result: Any = None
        if observed is not None:
            observed.approval_started()
        with cancel_scope_for(token):
            try:
                result = await request(execution, reason)
            except BaseException as exc:
                reraise_unless_contained(exc)
                APPROVAL_INCIDENTS.failed(exc)  # once per incident, not a traceback per call
                return fail(execution, Codes.UNAVAILABLE, f"approval provider failed: {describe_exception(exc)}", "approval_unavailable")
            finally:
                if observed is not None:
                    observed.approval_ended()
        APPROVAL_INCIDENTS.recovered()  # a flag check, unless an incident is open
        if token.is_cancelled:
            return fail(execution, Codes.ABORTED_BEFORE_DISPATCH, "cancelled while waiting for approval")
        result = plain_result(result)  # an "always" answer decides this call as its plain answer does
        if result is ApprovalResult.APPROVED:
            return None
        if result is ApprovalResult.DEFERRED and decided is None:
            return PendingApproval(
                execution.call_id, execution.name, execution.arguments_json,
                call_fingerprint(execution.name, execution.arguments_json), reason,
            )
        return self.refused_by(execution, result, reason)

    @staticmethod
    def refused_by(execution: ToolExecution, result: object, reason: str | None = None) -> ToolExecutionOutcome:
        """The outcome of a call whose approval answer was not ``APPROVED`` (nor a ``DEFERRED`` that parks it)."""
        asked = f" ({reason})" if reason else ""
        if result is ApprovalResult.REJECTED:
            return fail(execution, Codes.DENIED, f"approval rejected{asked}")
        if result is ApprovalResult.UNAVAILABLE:
            return fail(execution, Codes.UNAVAILABLE, f"approval unavailable{asked}")
        return fail(execution, Codes.UNAVAILABLE, f"approval provider returned {safe_repr(result)}, not an ApprovalResult")

    def _guards(self, execution: ToolExecution) -> ToolExecutionOutcome | None:
        for guard in self._chain("guard", execution.scope):
            try:
                veto = guard(execution)
            except Exception as exc:
                return fail(execution, Codes.TOOL_ERROR, f"guard failed: {describe_exception(exc)}")
            if veto is None:
                continue
            if isinstance(veto, str):
                return fail(execution, Codes.DENIED, veto or "vetoed by a guard")
            return fail(execution, Codes.TOOL_ERROR, f"guard returned {type(veto).__name__}; expected str or None")
        return None

    # -------------------------------------------------------- re-authorization
    async def reauthorize(self, execution: ToolExecution, entry: ToolEntry) -> ToolExecutionOutcome | None:
        """The last check before the body, against the live catalog; ``None`` means: run it.

        A plain view re-checks only the lifecycle (no authority, no context).
        A :class:`~tether_clr.ToolAssembly` asks the scope authority for the
        principal's scopes now (UNAVAILABLE ``authority_unavailable`` if it
        fails) and re-authorizes the binding: DENIED with the reason
        (``tool_disabled``, ``tool_retired``, ``tenant_denied``,
        ``scope_revoked``, ``deny_rule``, ``stale_binding``, ``kill_switch``); a host
        whose view of an attached control plane is too old: UNAVAILABLE ``control_stale``.
        """
        view = self._view
        context = execution.context
        if context is None:
            reason = view.live_refusal(entry)
        else:
            token = execution.cancellation
            scopes: frozenset[str] | None = None
            try:
                found = view.scopes_now()
                if isinstance(found, frozenset):  # no authority, or a synchronous one: no await
                    scopes = found
                else:
                    with cancel_scope_for(token):
                        scopes = await found
            except AuthorityUnavailableError as exc:
                logger.warning("scope authority failed for call %r: %s", execution.call_id, exc)
                return fail(execution, Codes.UNAVAILABLE, str(exc), "authority_unavailable")
            if scopes is None or token.is_cancelled:
                return fail(execution, Codes.ABORTED_BEFORE_DISPATCH, "cancelled while re-authorizing")
            reason = view.live_refusal(entry, scopes)
        return None if reason is None else _refusal(execution, entry, reason)
