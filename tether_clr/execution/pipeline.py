"""One call through the stages: resolve -> pre-execute -> approval -> guards ->
re-authorize -> execute -> post-execute -> result policies -> result listeners.

Every stage that runs user code converts what that code raises or returns wrongly
into a failure outcome with a stable code; only result policies (whose job is to
stop the batch) and the sink (infrastructure) may raise out of a batch. The batch
module decides *when* each stage runs; this module decides *what* it does.

Governance at execution: the execution carries the snapshot's request
context (``execution.context``); right before a body, the call is checked
again against the live catalog (:meth:`CallPipeline.reauthorize`), and a
result larger than the version's ``max_result_bytes`` is refused. Floor 4: it
imports the catalog, never the reverse.
"""

from __future__ import annotations

import contextvars
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from tether_clr.catalog.authority import AuthorityUnavailableError
from tether_clr.catalog.builtin import CatalogTool
from tether_clr.execution.grants import APPROVAL_INCIDENTS, approval_request
from tether_clr.execution.isolation import foreign_cancellation, in_own_context
from tether_clr.execution.timeouts import Timeouts, run_timed
from tether_clr.execution.waterfalls import ContractViolation, post_step, pre_step
from tether_clr.foundations.arguments import InvalidArgumentsJson, ParsedArguments, read_arguments
from tether_clr.foundations.cancellation import CancellationToken, OperationCancelledError, cancel_scope_for
from tether_clr.foundations.children import context_lending
from tether_clr.foundations.errors import ResultPolicyError, ToolArgumentError, ToolError
from tether_clr.foundations.json_values import canonical_json
from tether_clr.foundations.text import describe_exception, exception_text, safe_repr
from tether_clr.records.content import as_parts, content_parts, parts_to_json
from tether_clr.records.contexts import checked_contexts
from tether_clr.records.decisions import ApprovalResult, ToolPostDecision, ToolPreDecision
from tether_clr.records.grants import plain_result
from tether_clr.records.outcomes import ToolCall, ToolDispatch, ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.suspension import PendingApproval, call_fingerprint

if TYPE_CHECKING:
    from tether_clr.catalog.entries import ToolEntry
    from tether_clr.catalog.views import SealedToolCatalogView
    from tether_clr.execution.children import ChildCalling
    from tether_clr.execution.listeners import ListenerKind, ListenerSnapshot
    from tether_clr.execution.observing import ObservedCall
    from tether_clr.execution.ports import ApprovalProvider
    from tether_clr.records.scope import AgentPipelineScope

__all__ = ["ApprovalRequest", "CallPipeline", "describe_exception", "maybe_await"]

ApprovalRequest = Callable[[ToolExecution, "str | None"], Awaitable[Any]]
"""An approval provider's ``request``: ``(execution, reason) -> ApprovalResult``."""

logger = logging.getLogger("tether_clr")


def _fail(execution: ToolExecution, code: Codes, message: str, reason: str | None = None) -> ToolExecutionOutcome:
    return ToolExecutionOutcome.failed(execution.call_id, execution.name, code, message, reason)


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
        return _fail(execution, Codes.UNAVAILABLE, message, reason)
    tenant = None if execution.context is None else execution.context.tenant_id
    message = _REFUSALS[reason].format(tool=tool, tenant=tenant)
    return _fail(execution, Codes.DENIED, f"re-authorization refused the call: {message}", reason)


def _schema_not_loaded(execution: ToolExecution, entry: ToolEntry, view: SealedToolCatalogView) -> ToolExecutionOutcome:
    """INVALID_ARGS ``schema_not_loaded``: a deferred tool called before its schema was loaded, pointing to the search."""
    search = view.search_tool_name
    how = f"call {search!r} to find it and load its schema" if search is not None else "load its schema (with_loaded)"
    message = f"the schema of tool {entry.name!r} is not loaded in this request: {how}, then call it again"
    return _fail(execution, Codes.INVALID_ARGS, message, "schema_not_loaded")


def _limit_result(execution: ToolExecution, outcome: ToolExecutionOutcome, limit: int | None) -> ToolExecutionOutcome:
    """``max_result_bytes``: a result whose canonical JSON is larger (UTF-8 bytes) is TOOL_ERROR ``result_too_large``."""
    if limit is None or outcome.failure is not None:
        return outcome
    size = len(outcome.value_json.encode("utf-8"))
    if size <= limit:
        return outcome
    return _fail(execution, Codes.TOOL_ERROR, f"the result is {size} bytes, more than max_result_bytes={limit}", "result_too_large")


def _with_hook_content(
    execution: ToolExecution, outcome: ToolExecutionOutcome, hook: Callable[[ToolExecutionOutcome], Any], name: str
) -> ToolExecutionOutcome:
    """``outcome`` with the content ``hook`` gives it; TOOL_ERROR (reason ``content_hook``) naming the hook
    when it raises or returns something that is not content parts."""
    try:
        parts = hook(outcome)
        if inspect.iscoroutine(parts):
            parts.close()  # never awaited by design: content hooks are synchronous
            raise TypeError(f"{name} must be synchronous; it returned a coroutine")
        return outcome.with_content(as_parts(parts, name))
    except Exception as exc:
        return _fail(execution, Codes.TOOL_ERROR, f"{name} of {execution.name!r} failed: {describe_exception(exc)}", "content_hook")


async def maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


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


def _reraise_unless_contained(exc: BaseException) -> None:
    """Let through what the pipeline must not contain (a real cancellation, KeyboardInterrupt...).

    Contained, as a failure outcome: any ``Exception``, and a ``CancelledError``
    nothing asked for (:func:`~tether_clr.isolation.foreign_cancellation`).
    """
    if isinstance(exc, Exception) or foreign_cancellation(exc):
        return
    raise exc


class _Uninterruptible:
    """Stands in for the body's cancel scope when nothing can cancel its token (see ``execute``)."""

    cancelled_caught = False

    def __enter__(self) -> _Uninterruptible:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


_UNINTERRUPTIBLE = _Uninterruptible()


_STAGE_KINDS: tuple[ListenerKind, ...] = ("pre_execute", "guard", "execute", "post_execute", "result_policy", "result_listener")


class CallPipeline:
    """The stages of a single call, bound to one batch's view and listener snapshot."""

    __slots__ = ("_view", "_listeners", "_approval", "_scope", "_chains", "_unloaded", "_timeouts", "children")

    def __init__(
        self, view: SealedToolCatalogView, listeners: ListenerSnapshot, approval: ApprovalProvider | None,
        timeouts: Timeouts | None = None, children: ChildCalling | None = None,
    ) -> None:
        self._view = view
        self._timeouts = timeouts  # the registry's: default timeout, grace, abandoned bodies
        self.children = children  # lends a body that makes child calls its handle (execution/children.py)
        self._unloaded = view.unloaded  # empty, so falsy, in a view with no deferred tool: nothing more is paid
        self._listeners = listeners
        self._approval = approval
        # The chains of the view's own scope: every call of a batch runs in it.
        scope = self._scope = view.scope
        self._chains: dict[str, tuple[Any, ...]] = {kind: listeners.chain(kind, scope) for kind in _STAGE_KINDS}

    def _chain(self, kind: ListenerKind, scope: AgentPipelineScope | None) -> tuple[Any, ...]:
        """``listeners.chain(kind, scope)``, looked up once per batch for the view's scope."""
        return self._chains[kind] if scope is self._scope else self._listeners.chain(kind, scope)

    # ------------------------------------------------------------ resolution
    def begin(
        self, call: ToolCall, token: CancellationToken, parsed: ParsedArguments | None = None
    ) -> tuple[ToolCall, ToolExecution, ToolEntry | None, ToolExecutionOutcome | None]:
        """Build the execution and resolve the tool; an early outcome means no dispatch.

        Returns the call as it is to be declared to the sink: ``call`` itself, or,
        when its text is not valid Unicode, its :meth:`ToolCall.recordable` copy,
        which the execution and the outcome then carry too (refused INVALID_ARGS); arguments refused before they
        parse: its :meth:`ToolCall.with_arguments_refused` form, whose bounded prefix the execution carries too.
        A ``null`` a strict-mode model sent for an optional property whose schema
        refuses null is read as absent (:meth:`ArgumentValidator.admit
        <tether_clr.foundations.validation.ArgumentValidator.admit>`): the
        execution then carries the arguments without those keys, while the
        declared call keeps the model's raw text.
        ``parsed``, when given, must be ``read_arguments(call.arguments,
        view.argument_limits)``, fresh and seen by no one else; it saves reading them again.
        """
        raw, invalid = call.arguments, call.invalid_text_fields()  # raw: a lone surrogate there refuses the text
        call = call.recordable() if invalid else call
        scope = call.scope if call.scope is not None else self._view.scope
        parse_error: str | None = call.argument_error
        arguments: Any = None
        try:
            if parse_error is not None:  # the client could not parse the model's text: never run it
                raise InvalidArgumentsJson(parse_error)
            if parsed is None or invalid:
                parsed = read_arguments(raw, self._view.argument_limits)
            arguments, arguments_json = parsed.value, parsed.json
        except InvalidArgumentsJson as exc:
            parse_error = str(exc)
            call = replace(call, arguments=raw).with_arguments_refused(parse_error, self._view.argument_limits.max_logged_bytes)
            arguments_json = canonical_json(call.arguments)
        execution = ToolExecution(
            call_id=call.call_id,
            name=call.name,
            arguments_json=arguments_json,
            scope=scope,
            cancellation=token,
            owner=None if scope is None else scope.owner,
            parent_call_id=call.parent_call_id,
            invocation_context=call.invocation_context,
            context=self._view.context,
        )
        if invalid:
            fields = " and ".join(invalid)
            return call, execution, None, _fail(
                execution, Codes.INVALID_ARGS, f"the call's {fields} is not valid Unicode text (a lone surrogate)"
            )
        entry = self._view.resolve(call.name)
        if entry is None:
            return call, execution, None, _fail(execution, Codes.UNKNOWN_TOOL, f"no tool named {call.name!r} is visible in this scope")
        unloaded = self._unloaded
        if unloaded and entry.name in unloaded:  # deferred, schema not loaded: the model never saw the parameters
            return call, execution, entry, _schema_not_loaded(execution, entry, self._view)
        if parse_error is not None:
            return call, execution, entry, _fail(execution, Codes.INVALID_ARGS, parse_error)
        admitted, schema_error = entry.validator.admit(arguments)
        if schema_error is not None:
            return call, execution, entry, _fail(execution, Codes.INVALID_ARGS, f"arguments do not match the schema of {call.name!r}: {schema_error}")
        if admitted is not arguments:  # strict-mode nulls read as absent: the body and approvers see the cleaned arguments
            execution = replace(execution, arguments_json=canonical_json(admitted))
        return call, execution, entry, None

    # ---------------------------------------------------------- authorization
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
        try:
            decision = await self._pre_execute(execution)
        except BaseException as exc:
            _reraise_unless_contained(exc)
            return _fail(execution, Codes.TOOL_ERROR, f"pre-execute listener failed: {describe_exception(exc)}")
        if decision.is_deny:
            return _fail(execution, Codes.DENIED, decision.reason or "denied by a pre-execute listener")
        reason: str | None = None
        if decision.is_ask:
            reason = decision.reason or ""
        elif not decision.is_allow:
            return _fail(execution, Codes.TOOL_ERROR, f"pre-execute listener returned an unknown decision {safe_repr(decision.kind)}")
        elif entry is not None and _requires_approval(entry, execution):
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

    async def _pre_execute(self, execution: ToolExecution) -> ToolPreDecision:
        chain = self._chain("pre_execute", execution.scope)
        if not chain:  # no waterfall to build: the end of an empty chain allows
            return ToolPreDecision.allow()
        return await pre_step(chain, 0, execution)

    async def _approve(
        self, execution: ToolExecution, reason: str | None, decided: ApprovalRequest | None = None, entry: ToolEntry | None = None,
        observed: ObservedCall | None = None,
    ) -> ToolExecutionOutcome | PendingApproval | None:
        asked = f" ({reason})" if reason else ""
        request = decided  # a decision taken while the step was suspended: nobody is asked now
        if request is None:
            if self._approval is None:
                return _fail(execution, Codes.DENIED, f"approval required{asked} but no approval provider is configured")
            scope = execution.scope
            if scope is None or (scope.session is None and scope.session_id is None) or scope.owner is None:
                return _fail(execution, Codes.DENIED, f"approval required{asked} but the scope has no session or owner to ask")
            request = approval_request(self._approval, entry)  # through the sink's grants, when it holds them
        token = execution.cancellation
        result: Any = None
        if observed is not None:
            observed.approval_started()
        with cancel_scope_for(token):
            try:
                result = await request(execution, reason)
            except BaseException as exc:
                _reraise_unless_contained(exc)
                APPROVAL_INCIDENTS.failed(exc)  # once per incident, not a traceback per call
                return _fail(execution, Codes.UNAVAILABLE, f"approval provider failed: {describe_exception(exc)}", "approval_unavailable")
            finally:
                if observed is not None:
                    observed.approval_ended()
        APPROVAL_INCIDENTS.recovered()  # a flag check, unless an incident is open
        if token.is_cancelled:
            return _fail(execution, Codes.ABORTED_BEFORE_DISPATCH, "cancelled while waiting for approval")
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
            return _fail(execution, Codes.DENIED, f"approval rejected{asked}")
        if result is ApprovalResult.UNAVAILABLE:
            return _fail(execution, Codes.UNAVAILABLE, f"approval unavailable{asked}")
        return _fail(execution, Codes.UNAVAILABLE, f"approval provider returned {safe_repr(result)}, not an ApprovalResult")

    def _guards(self, execution: ToolExecution) -> ToolExecutionOutcome | None:
        for guard in self._chain("guard", execution.scope):
            try:
                veto = guard(execution)
            except Exception as exc:
                return _fail(execution, Codes.TOOL_ERROR, f"guard failed: {describe_exception(exc)}")
            if veto is None:
                continue
            if isinstance(veto, str):
                return _fail(execution, Codes.DENIED, veto or "vetoed by a guard")
            return _fail(execution, Codes.TOOL_ERROR, f"guard returned {type(veto).__name__}; expected str or None")
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
                return _fail(execution, Codes.UNAVAILABLE, str(exc), "authority_unavailable")
            if scopes is None or token.is_cancelled:
                return _fail(execution, Codes.ABORTED_BEFORE_DISPATCH, "cancelled while re-authorizing")
            reason = view.live_refusal(entry, scopes)
        return None if reason is None else _refusal(execution, entry, reason)

    # -------------------------------------------------------------- execution
    @property
    def swaps_cancellation(self) -> bool:
        """Execute listeners may hand a body another token than its execution's (the view's scope has some)."""
        return bool(self._chains["execute"])

    def cancelled(self, execution: ToolExecution) -> ToolExecutionOutcome:
        """ABORTED for a body its execution's token interrupted, as :meth:`execute` reports it."""
        return _fail(execution, Codes.ABORTED, f"cancelled: {execution.cancellation.reason or 'cancellation requested'}")

    async def execute(
        self, execution: ToolExecution, entry: ToolEntry, interruptible: bool = True, key: str | None = None,
        observed: ObservedCall | None = None,
    ) -> ToolExecutionOutcome:
        """Execute waterfall around the tool body; never raises for tool faults.

        ``interruptible=False`` is the batch's promise that nothing can cancel the
        execution's token while this body runs (an inline call in a batch whose
        caller passed no cancellable token), or that the batch links the token to
        a cancel scope around this call itself (a parallel worker, which then
        reports an interrupted body with :meth:`cancelled`); with no execute
        listener to swap in another token, the body then runs without a cancel
        scope of its own. ``key``: the call's key in the step (its position, or a
        child's key), under which a body that makes child calls keys its children.
        The tool's timeout (:mod:`~tether_clr.execution.timeouts`) runs around the
        body, inside the waterfall: execute listeners see its outcome.
        ``observed``: the call's instrumentation, told each body (``body`` stage).
        """
        if observed is not None:
            observed.stage = "body"
        chain = self._chain("execute", execution.scope)
        if not chain:  # no waterfall to build: straight to the body, with the same containment
            try:
                return await self._run_body(ToolDispatch(execution, execution.cancellation), entry, interruptible, key, observed)
            except BaseException as exc:
                _reraise_unless_contained(exc)
                return _fail(execution, Codes.TOOL_ERROR, f"execute listener failed: {describe_exception(exc)}")

        async def step(index: int, dispatch: ToolDispatch) -> ToolExecutionOutcome:
            if index == len(chain):
                return await self._run_body(dispatch, entry, True, key, observed)

            async def next_(changed: ToolDispatch | None = None) -> ToolExecutionOutcome:
                if changed is None:
                    changed = dispatch
                elif not isinstance(changed, ToolDispatch) or changed.execution is not execution:
                    raise ContractViolation("execute listeners may only replace the dispatch's cancellation")
                return await step(index + 1, changed)

            outcome = await chain[index](dispatch, next_)
            if not isinstance(outcome, ToolExecutionOutcome):
                raise ContractViolation(f"execute listener returned {type(outcome).__name__}, expected ToolExecutionOutcome")
            return outcome

        try:
            return await step(0, ToolDispatch(execution, execution.cancellation))
        except BaseException as exc:
            _reraise_unless_contained(exc)
            return _fail(execution, Codes.TOOL_ERROR, f"execute listener failed: {describe_exception(exc)}")

    async def _run_body(
        self, dispatch: ToolDispatch, entry: ToolEntry, interruptible: bool = True, key: str | None = None,
        observed: ObservedCall | None = None,
    ) -> ToolExecutionOutcome:
        execution = dispatch.execution
        outcome: ToolExecutionOutcome | None = None
        timeouts = self._timeouts
        seconds = None if timeouts is None else timeouts.of(entry)
        # The caller's token always reaches the body, even if a listener swapped in an unlinked one.
        linked = cancel_scope_for(execution.cancellation, dispatch.cancellation) if interruptible else _UNINTERRUPTIBLE
        with linked as scope:
            if seconds is None:
                outcome = await self._invoke(execution, entry, key, observed, dispatch.cancellation)
            else:  # a timed body: its own token, cancelled at the deadline (execution/timeouts.py)
                assert timeouts is not None
                tokens = (execution.cancellation, dispatch.cancellation)
                outcome = await run_timed(partial(self._invoke, execution, entry, key, observed), execution, tokens, seconds, timeouts)
        if outcome is None or scope.cancelled_caught:
            reason = dispatch.cancellation.reason or execution.cancellation.reason or "cancellation requested"
            return _fail(execution, Codes.ABORTED, f"cancelled: {reason}")
        outcome = _limit_result(execution, outcome, entry.max_result_bytes)
        if entry.project_content is None or outcome.failure is not None:
            return outcome
        return _with_hook_content(execution, outcome, entry.project_content, "project_content")

    async def _invoke(
        self, execution: ToolExecution, entry: ToolEntry, key: str | None, observed: ObservedCall | None, token: CancellationToken
    ) -> ToolExecutionOutcome:
        """The tool body with ``token``, its failures as outcomes; a cancellation of the awaiting task propagates.

        A body that makes child calls is lent a handle on ``token`` (so a timeout cancels its children
        too), closed when the body ends. An observed body is told to its instrumentation, with the
        context copy it runs in (where a span can be made current for the body alone)."""
        lent = None
        if key is not None and self.children is not None and getattr(entry.tool, "makes_child_calls", False) is True:
            lent = self.children.lend(execution, key, token)
        try:
            # In a copy of the context: what the body sets there is seen by nothing else.
            if entry.catalog_tool:  # the catalog's own tool (the tool search): it reads the view of the call
                body = cast(CatalogTool, entry.tool).invoke_in_view(self._view, execution.arguments, token)
            else:
                body = entry.tool.invoke(execution.arguments, token)
            context = None if lent is None else context_lending(lent)
            if observed is not None:
                context = contextvars.copy_context() if context is None else context
                observed.body_started(context)
            try:
                value = await in_own_context(body, context)
            finally:
                if lent is not None:
                    lent.close()
                if observed is not None:
                    observed.body_ended()
        except ToolArgumentError as exc:
            return _fail(execution, Codes.INVALID_ARGS, exception_text(exc) or "arguments could not be bound")
        except OperationCancelledError as exc:
            return _fail(execution, Codes.ABORTED, f"cancelled: {exception_text(exc)}")
        except ToolError as exc:
            return _fail(execution, Codes.TOOL_ERROR, exception_text(exc) or "tool failed")
        except Exception as exc:
            return _fail(execution, Codes.TOOL_ERROR, describe_exception(exc))
        except BaseException as exc:  # a CancelledError nothing asked for: the tool's own failure
            _reraise_unless_contained(exc)
            return _fail(execution, Codes.TOOL_ERROR, f"the tool raised {describe_exception(exc)} without being cancelled")
        try:
            parts = content_parts(value)
            if parts is None:
                return ToolExecutionOutcome.success(execution.call_id, execution.name, value)
            # the body answered with content: its value is the parts' JSON
            return ToolExecutionOutcome.success(execution.call_id, execution.name, parts_to_json(parts)).with_content(parts)
        except TypeError as exc:
            return _fail(execution, Codes.TOOL_ERROR, f"tool result is not JSON-compatible: {exc}")

    # ---------------------------------------------------------------- review
    async def review(
        self, execution: ToolExecution, outcome: ToolExecutionOutcome
    ) -> tuple[ToolExecutionOutcome, tuple[str, ...]]:
        """Post-execute waterfall: accept, replace or block a dispatched call's outcome; with the
        additional contexts the decision adds (none when the waterfall failed)."""
        chain = self._chain("post_execute", execution.scope)
        if not chain:
            return outcome, ()

        try:
            decision = await post_step(chain, 0, execution, outcome)
        except BaseException as exc:
            _reraise_unless_contained(exc)
            return _fail(execution, Codes.TOOL_ERROR, f"post-execute listener failed: {describe_exception(exc)}"), ()
        try:  # a decision built without its factories is checked here: bad contexts fail the call closed
            contexts = checked_contexts(decision.contexts)
        except (TypeError, ValueError) as exc:
            return _fail(execution, Codes.TOOL_ERROR, f"post-execute listener added a bad context: {exc}"), ()
        return self._decided(execution, outcome, decision), contexts

    @staticmethod
    def _decided(execution: ToolExecution, outcome: ToolExecutionOutcome, decision: ToolPostDecision) -> ToolExecutionOutcome:
        if decision.is_accept:
            return outcome
        if decision.is_block:
            return _fail(execution, Codes.BLOCKED, decision.reason or "blocked by a post-execute listener")
        if decision.is_replace:
            try:
                return ToolExecutionOutcome.success(outcome.call_id, outcome.name, decision.value)
            except TypeError as exc:
                return _fail(execution, Codes.TOOL_ERROR, f"post-execute replacement is not JSON-compatible: {exc}")
        return _fail(execution, Codes.TOOL_ERROR, f"post-execute listener returned an unknown decision {safe_repr(decision.kind)}")

    @staticmethod
    def finalize(execution: ToolExecution, entry: ToolEntry | None, outcome: ToolExecutionOutcome) -> ToolExecutionOutcome:
        """The tool's ``finalize_content`` hook, last, on any outcome of a call that resolved to it."""
        if entry is None or entry.finalize_content is None:
            return outcome
        return _with_hook_content(execution, outcome, entry.finalize_content, "finalize_content")

    # -------------------------------------------------------------- policies
    async def enforce_policies(self, execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        """Await every result policy; the first that raises rejects the outcome."""
        for policy in self._chain("result_policy", execution.scope):
            try:
                await maybe_await(policy(execution, outcome))
            except Exception as exc:
                raise ResultPolicyError(
                    f"result policy rejected the outcome of call {execution.call_id!r} ({execution.name}): "
                    f"{describe_exception(exc)}",
                    outcome,
                ) from exc

    def audit_listeners(self) -> tuple[Any, ...]:
        """The batch's audit listeners (registry-wide); empty means no audit machinery runs."""
        return self._listeners.chain("audit", None)

    async def notify(self, execution: ToolExecution, outcome: ToolExecutionOutcome) -> None:
        for listener in self._chain("result_listener", execution.scope):
            try:
                await maybe_await(listener(outcome))
            except BaseException as exc:
                _reraise_unless_contained(exc)
                logger.exception("result listener raised for call %r; ignored", outcome.call_id)

