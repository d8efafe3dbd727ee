"""Resuming and cancelling a suspended step, from the session log alone.

:meth:`~tether_clr.ToolRegistry.resume` and :meth:`~tether_clr.ToolRegistry.cancel_suspended`
call :func:`resume_step` and :func:`cancel_step`, which use only the store's
public protocol (:class:`~tether_clr.SessionStore`), so any store can be resumed. Both start by taking the session's lease and reading its log in one
transaction, so the log they decide from cannot change under them and a
second resumer of the same step fails (SessionLeasedError) instead of running a
body twice. Everything is checked before anything runs: a failed check releases
the lease and raises ``ValueError``, writing nothing.

Resuming rebuilds the step from the log: the proposal (``assistant/message``)
gives every call's raw arguments, the ``tool/call`` events say which calls were
declared, the ``tool/result`` events which were delivered (their outcomes come
back first), ``approval/asked`` the arguments and fingerprint the approver was
shown. The parked call and every call after it then run through the full
pipeline as one batch whose declarations keep their positions in the proposal;
the parked call's approval step is answered by the decision (recorded as
``approval/decided``), never by the provider.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio

from tether_clr.catalog.store import ToolCatalog
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.batch import BatchRun
from tether_clr.execution.resumption import ResumePoint
from tether_clr.execution.hooks import HookSet
from tether_clr.execution.ports import ToolCallSink
from tether_clr.foundations.arguments import InvalidArgumentsJson, RefusedArguments, read_arguments
from tether_clr.recording.session.encoding import (
    PendingEvent,
    call_payload,
    check_session_id,
    dumps,
    outcome_from_result,
    result_payload,
)
from tether_clr.recording.session.events import (
    STEP_END,
    TOOL_CALL,
    TOOL_RESULT,
    USER_MESSAGE,
    SessionEvent,
)
from tether_clr.recording.session.protocol import SessionClaim, SessionStore
from tether_clr.recording.session.steps import StepLog, read_steps, step_contexts, user_message
from tether_clr.records.context import RequestContext
from tether_clr.records.decisions import ApprovalResult
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.scope import AgentPipelineScope
from tether_clr.records.suspension import BatchSuspended, call_fingerprint

__all__ = ["CANCELLED", "StepRunner", "cancel_step", "resume_step"]

CANCELLED = "cancelled"
"""The failure ``reason`` of the calls a cancelled suspended step ends (ABORTED_BEFORE_DISPATCH)."""


def _suspended_step(session_id: str, events: tuple[SessionEvent, ...]) -> StepLog:
    suspended = read_steps(events).suspended()
    if not suspended:
        raise ValueError(f"session {session_id!r} has no suspended step (it finished, was cancelled, or never parked a call)")
    return suspended[0]  # a session suspends one step at a time; the earliest is the one to continue


def _outcome(step: StepLog, position: int) -> ToolExecutionOutcome:
    """The outcome a delivered call's ``tool/result`` records, as the batch returned it."""
    event = step.results[position]
    proposal = step.proposal(position) or {}
    proposed_id = proposal.get("call_id")
    call_id = proposed_id if isinstance(proposed_id, str) else event.call_id or ""
    name = event.payload.get("name")
    return outcome_from_result(call_id, name if isinstance(name, str) else "", event.payload)


def _delivered(step: StepLog, first_parked: int) -> tuple[ToolExecutionOutcome, ...]:
    """The outcomes before the first parked call: all of them must be in the log (results are a model-order prefix)."""
    positions = sorted(call["index"] for call in step.proposed if isinstance(call.get("index"), int))
    missing = [p for p in positions if p < first_parked and p not in step.results]
    if missing:
        raise ValueError(
            f"turn {step.turn}, step {step.step}: the calls at positions {missing} before the parked one have no "
            "result (a crash interrupted the step): repair the session first"
        )
    try:
        return tuple(_outcome(step, p) for p in positions if p < first_parked)
    except (KeyError, ValueError, TypeError) as exc:
        raise ValueError(f"turn {step.turn}, step {step.step}: a recorded result cannot be read back: {exc}") from None


def _check_parked(step: StepLog, position: int, argument_limits: Any) -> str:
    """The fingerprint recorded for the parked call, after checking that the log still agrees with itself."""
    asked = step.asked.get(position)
    proposal = step.proposal(position)
    if asked is None or proposal is None:
        raise ValueError(f"turn {step.turn}, step {step.step}: the parked call at position {position} has no recorded request")
    name, arguments, fingerprint = (asked.payload.get(key) for key in ("name", "arguments", "fingerprint"))
    if not (isinstance(name, str) and isinstance(arguments, str) and isinstance(fingerprint, str)):
        raise ValueError(f"call {asked.call_id!r}: the recorded request lacks its name, arguments or fingerprint")
    if call_fingerprint(name, arguments) != fingerprint:
        raise ValueError(f"call {asked.call_id!r}: the recorded arguments no longer match their fingerprint (the log was altered)")
    decided = step.decided[position].payload.get("fingerprint")
    if decided is not None and decided != fingerprint:
        raise ValueError(f"call {asked.call_id!r}: the recorded decision and request disagree on the fingerprint")
    raw = proposal.get("arguments")
    try:
        proposed = read_arguments(raw, argument_limits).json if isinstance(raw, str) else None
    except InvalidArgumentsJson:
        proposed = None
    if proposal.get("name") != name or proposed != arguments:
        raise ValueError(f"call {asked.call_id!r}: the proposal in the log no longer matches the arguments the approver was shown")
    return fingerprint


def _decisions(step: StepLog, decisions: Mapping[str, Any], argument_limits: Any) -> dict[int, ApprovalResult]:
    """Position -> decision for the parked calls; ValueError for anything that does not fit them exactly."""
    if not isinstance(decisions, Mapping):
        raise TypeError(f"decisions must map call ids to ApprovalResult values, got {type(decisions).__name__}")
    parked = {step.decided[p].call_id or "": p for p in step.parked}
    unknown = sorted(str(call_id) for call_id in decisions if call_id not in parked)
    if unknown:
        raise ValueError(f"no parked call has the id {', '.join(map(repr, unknown))} (parked: {sorted(map(str, parked))})")
    decided: dict[int, ApprovalResult] = {}
    for call_id, position in parked.items():
        if call_id not in decisions:
            raise ValueError(f"no decision for the parked call {call_id!r}")
        value = decisions[call_id]
        bound: object = None
        if isinstance(value, tuple) and len(value) == 2:
            value, bound = value
            if not isinstance(bound, str):
                raise TypeError(f"the fingerprint bound to the decision for {call_id!r} must be a str, got {type(bound).__name__}")
        if not isinstance(value, ApprovalResult):
            raise TypeError(f"the decision for {call_id!r} must be an ApprovalResult, got {type(value).__name__}")
        if value is ApprovalResult.DEFERRED:
            raise ValueError(f"DEFERRED decides nothing: call {call_id!r} is already parked")
        if value in (ApprovalResult.APPROVED_ALWAYS, ApprovalResult.REJECTED_ALWAYS):
            raise ValueError(f"a resumed decision is not remembered as a grant: decide call {call_id!r} APPROVED or REJECTED")
        recorded = _check_parked(step, position, argument_limits)
        if bound is not None and bound != recorded:
            raise ValueError(f"the decision for {call_id!r} was bound to other arguments (fingerprint {bound}, recorded {recorded})")
        decided[position] = value
    return decided


def _default_view(catalog: ToolCatalog, session_id: str, step: StepLog, position: int) -> SealedToolCatalogView:
    """The catalog for the recorded request context, in a scope of this session owned by the recorded owner."""
    payload = step.asked[position].payload
    owner = payload.get("owner")
    scope = AgentPipelineScope(session_id=session_id, owner=owner if isinstance(owner, str) else None)
    recorded = payload.get("context")
    if not isinstance(recorded, dict):
        return catalog.seal(scope)
    try:
        context = RequestContext(**recorded)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the request context recorded for the parked call cannot be read back: {exc}") from None
    return catalog.assemble(context, scope)


def _refused(call: Mapping[str, Any]) -> RefusedArguments | None:
    """The recorded ``arguments_refused`` of a proposed call (size and hash; its ``arguments`` are the prefix)."""
    refused = call.get("arguments_refused")
    if not isinstance(refused, Mapping):
        return None
    size, digest = refused.get("bytes"), refused.get("sha256")
    if type(size) is not int or not isinstance(digest, str):
        return None
    prefix = call.get("arguments")
    return RefusedArguments(size, digest, prefix if isinstance(prefix, str) else "")


def _calls(step: StepLog, first: int) -> list[ToolCall]:
    """The proposed calls from position ``first`` on, in model order (positions ``first``, ``first + 1``, ...)."""
    proposed = sorted((c for c in step.proposed if isinstance(c.get("index"), int)), key=lambda c: c["index"])
    if [c["index"] for c in proposed] != list(range(len(proposed))):
        raise ValueError(f"turn {step.turn}, step {step.step}: the recorded proposal's positions are not 0..{len(proposed) - 1}")
    calls = []
    for call in proposed[first:]:
        call_id, name, arguments = call.get("call_id"), call.get("name"), call.get("arguments")
        parent, error, refused = call.get("parent_call_id"), call.get("argument_error"), _refused(call)
        if refused is not None and isinstance(error, str) and arguments is None:
            arguments = ""  # refused before its arguments parsed: it is refused again, never run
        if not (isinstance(call_id, str) and isinstance(name, str) and isinstance(arguments, str)):
            raise ValueError(f"turn {step.turn}, step {step.step}: the proposal of position {call['index']} cannot be read back")
        calls.append(ToolCall(
            call_id, name, arguments,
            parent_call_id=parent if isinstance(parent, str) else None,
            argument_error=error if isinstance(error, str) else None,
            arguments_refused=refused if isinstance(error, str) else None,
        ))
    return calls


@asynccontextmanager
async def _claimed(store: SessionStore, session_id: str) -> AsyncIterator[SessionClaim]:
    """The session's lease taken by a new holder and its log read (:meth:`SessionStore.claim`).

    The claim is shielded, so a cancellation cannot land between a claim that
    succeeded and the code that releases it (it is delivered at the next
    checkpoint, inside the block). If the block raises, the lease is released:
    a refused resume or cancel writes nothing and leaves the session free.
    """
    with anyio.CancelScope(shield=True):
        claim = await store.claim(check_session_id(session_id))
    try:
        yield claim
    except BaseException:
        with anyio.CancelScope(shield=True):
            await store.release(claim.session_id, claim.holder)
        raise


StepRunner = Callable[[list[ToolCall], SealedToolCatalogView, ToolCallSink, ResumePoint], BatchRun]
"""Builds the batch that continues a step: ``run(calls, view, sink, point)`` (the registry's listeners,
approval provider and limits)."""


async def resume_step(
    store: SessionStore,
    session_id: str,
    decisions: Mapping[str, Any],
    catalog: ToolCatalog,
    run: StepRunner,
    *,
    view: SealedToolCatalogView | None = None,
    wrap_sink: Callable[[ToolCallSink], ToolCallSink] | None = None,
    withdrawn: Collection[str] = (),
) -> list[ToolExecutionOutcome] | BatchSuspended:
    """Continue the session's suspended step with the approvers' decisions (see :meth:`ToolRegistry.resume`).

    ``catalog`` assembles the default view and bounds the recorded arguments;
    ``run`` builds the batch. Uses only the store's public protocol.
    """
    async with _claimed(store, session_id) as claim:
        step = _suspended_step(claim.session_id, claim.events)
        first = step.parked[0]
        decided = _decisions(step, decisions, catalog.argument_limits)
        prior = _delivered(step, first)
        calls = _calls(step, first)
        if view is None:
            view = _default_view(catalog, claim.session_id, step, first)
        sink = store.sink(claim.session_id, step.turn, step.step, claim=claim)
        contexts = tuple(text for position, _, text in step_contexts(step) if position < first)
        point = ResumePoint(first, frozenset(step.declared), decided, prior, contexts, _withdrawn(step, first, withdrawn))
        wrapped: ToolCallSink = sink if wrap_sink is None else wrap_sink(sink)
        hooks = HookSet.of(wrapped)
        if hooks is None or not hooks.parks_approvals:
            raise TypeError(
                "wrap_sink must forward every hook of the session sink, approval_asked and approval_decided "
                "included, and its parks_approvals (subclass ForwardingSink)"
            )
        batch = run(calls, view, wrapped, point)
    try:
        return await batch.run()  # its sink releases the lease when the batch returns or raises...
    finally:
        with anyio.CancelScope(shield=True):  # ...unless it was cancelled before it started
            await sink.abandon()


def _withdrawn(step: StepLog, first: int, withdrawn: Collection[str]) -> frozenset[int]:
    """The positions of the ``withdrawn`` call ids: each must be a call after the first parked one that is
    neither parked nor delivered (a call waiting behind the parked ones); ValueError otherwise."""
    if isinstance(withdrawn, str):
        raise TypeError("withdrawn must be a collection of call ids, not one str")
    if not withdrawn:
        return frozenset()
    parked = set(step.parked)
    waiting = {
        call.get("call_id"): call["index"] for call in step.proposed
        if isinstance(call.get("index"), int) and call["index"] > first and call["index"] not in parked
        and call["index"] not in step.results
    }
    unknown = sorted(str(call_id) for call_id in withdrawn if call_id not in waiting)
    if unknown:
        raise ValueError(f"no call waits behind the parked ones with the id {', '.join(map(repr, unknown))}")
    return frozenset(waiting[call_id] for call_id in withdrawn)


async def cancel_step(store: SessionStore, session_id: str, reason: str) -> list[ToolExecutionOutcome]:
    """Abandon the session's suspended step (see :meth:`ToolRegistry.cancel_suspended`)."""
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError("cancel_suspended needs a non-empty reason")
    async with _claimed(store, session_id) as claim:
        step = _suspended_step(claim.session_id, claim.events)
        first = step.parked[0]
        outcomes = list(_delivered(step, first))
        rows: list[PendingEvent] = []
        for position, call in enumerate(_calls(step, first), first):
            rows.extend(_cancelled(step, position, call, reason, outcomes))
        rows.extend(  # the contexts of the calls delivered before it was suspended: after the last result
            PendingEvent(step.turn, step.step, USER_MESSAGE, call_id, None, dumps(user_message(position, text)))
            for position, call_id, text in step_contexts(step)
        )
        rows.append(PendingEvent(step.turn, step.step, STEP_END, None, None, dumps({"calls": len(step.proposed), CANCELLED: True})))
    with anyio.CancelScope(shield=True):  # one transaction: the step ends and the lease is released
        await store.append(claim.session_id, claim.holder, rows, first=False, release=True)
    return outcomes


def _cancelled(step: StepLog, position: int, call: ToolCall, reason: str, outcomes: list[ToolExecutionOutcome]) -> list[PendingEvent]:
    """The events that end one unrun call of a cancelled step: its declaration if it had none, and its result."""
    rows: list[PendingEvent] = []
    if position not in step.declared:
        rows.append(PendingEvent(step.turn, step.step, TOOL_CALL, call.call_id, position, call_payload(position, call)))
    outcome = ToolExecutionOutcome.failed(
        call.call_id, call.name, Codes.ABORTED_BEFORE_DISPATCH, f"not dispatched: the suspended step was cancelled: {reason}", CANCELLED
    )
    outcomes.append(outcome)
    rows.append(PendingEvent(step.turn, step.step, TOOL_RESULT, outcome.call_id, position, result_payload(position, outcome)))
    return rows
