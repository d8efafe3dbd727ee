"""Calls that run alone: a batch with no sink whose calls run one after another, straight through the stages.

Most batches an agent framework or an MCP server runs hold one call and no sink
(a framework that invokes tools one by one; an MCP ``tools/call``); a batch of
several calls none of which may overlap (EXCLUSIVE: their tools set no
concurrency classifier) runs them one after another. Nothing can overlap,
nothing is declared, nothing can be parked and nothing can abort the batch
while a body runs, so such a batch needs none of the general
machinery of :class:`~tether_clr.execution.batch.BatchRun`: no cancellation
source of its own (the execution carries the caller's token, or a token that
is never cancelled), no batch id, no slot, no group, no task, semaphore or
cancel scope (the body gets one only when the caller's token can cancel it),
and no yield to the event loop: a cancelled caller is cancelled on entry,
before anything is resolved, by :func:`anyio.lowlevel.checkpoint_if_cancelled`,
which reads the caller's cancel scopes without a loop iteration.

The stages are the same :class:`~tether_clr.execution.pipeline.CallPipeline`
calls in the same order as a one-call group of a batch (each call delivered
before the next one starts), with the same outcomes: resolution, authorization (a ``DEFERRED`` approval cannot be parked
without a sink: UNAVAILABLE ``approval_deferred``), re-authorization, the
body, review, ``finalize_content``, the audit record, the result policies (one
that raises ends the batch with :class:`~tether_clr.errors.ResultPolicyError`,
holding the outcomes delivered before it) and the result listeners; a caller's
token cancelled during the batch leaves the calls after it ABORTED_BEFORE_DISPATCH.

What a lone call does not handle goes to a :class:`BatchRun` instead, before
anything ran: a batch inside :func:`~tether_clr.execution.admission.admission_only`,
an observed batch (instrumentation that records), a tool that makes child
calls or has a retry policy, and, with several calls, any call that may run
in parallel or a registry subclass's own ``classify``. Floor 4 (execution).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anyio.lowlevel

from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.admission import admission_only_active
from tether_clr.execution.auditing import audit_record, tell_auditors
from tether_clr.execution.batch import BatchRun
from tether_clr.execution.instrumentation import Instrumentation
from tether_clr.execution.listeners import ListenerSnapshot
from tether_clr.execution.observing import ObservedBatch, observe_batch
from tether_clr.execution.pipeline import CallPipeline
from tether_clr.execution.pool import Slot, not_dispatched, unparkable
from tether_clr.execution.ports import ApprovalProvider, Declaration
from tether_clr.execution.timeouts import Timeouts
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.children import makes_child_calls
from tether_clr.foundations.errors import ResultPolicyError
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from tether_clr.records.suspension import PendingApproval

__all__ = ["run_alone"]

_NEVER_CANCELLED = CancellationToken.none()


def _runs_alone(entry: ToolEntry | None) -> bool:
    """Whether a lone call of ``entry``'s tool can run here: not one that makes child calls (its body is
    lent a handle on the batch) nor one with a retry policy (each attempt is recorded by the batch)."""
    return entry is None or (entry.retry is None and not makes_child_calls(entry.tool))


async def run_alone(
    calls: list[ToolCall],
    view: SealedToolCatalogView,
    listeners: ListenerSnapshot,
    approval: ApprovalProvider | None,
    cancellation: CancellationToken | None,
    timeouts: Timeouts | None,
    instrumentation: Instrumentation | None,
    general: Callable[[], BatchRun],
    classified: bool = False,
) -> BatchOutcomes:
    """Run ``calls`` (checked by :func:`~tether_clr.execution.inputs.validate_batch`), a batch with no sink, one
    call after another; ``general`` makes the :class:`BatchRun` of the same batch, run instead when a call needs
    it. With more than one call, every call must be EXCLUSIVE for the built-in classification (its tool sets
    no concurrency classifier, so nothing could overlap) and ``classified`` False (no registry subclass
    classifies them); a lone call runs alone whatever its classification."""
    await anyio.lowlevel.checkpoint_if_cancelled()  # a cancelled caller: cancelled here, before anything
    several = len(calls) > 1
    if admission_only_active() or (several and classified):
        return await _general(general)
    resolve = view.resolve
    for call in calls:
        entry = resolve(call.name)
        if not _runs_alone(entry) or (several and entry is not None and entry.concurrency is not None):
            return await _general(general)
    observed = observe_batch(instrumentation, view)
    if observed is not None:
        return await _general(general, observed)
    pipeline = CallPipeline(view, listeners, approval, timeouts)
    token = _NEVER_CANCELLED if cancellation is None else cancellation
    audit = pipeline.audit_listeners()
    # Every call runs in the view's scope (validate_batch): a stage with no listener there is not even called.
    reviews, notifies = pipeline.listens("post_execute"), pipeline.listens("result_listener")
    delivered: list[ToolExecutionOutcome] = []
    contexts: list[str] = []
    for call in calls:  # one call through every stage, as a one-call group of a batch runs it
        started = time.perf_counter() if audit else 0.0
        _, execution, entry, fresh, outcome = pipeline.begin(call, token)
        dispatched = False
        if outcome is None:
            assert entry is not None
            outcome, dispatched = await _admit_and_run(pipeline, execution, entry, token, fresh)
        if dispatched and reviews:
            outcome, added = await pipeline.review(execution, outcome)
            contexts.extend(added)
        outcome = pipeline.finalize(execution, entry, outcome)
        if audit:
            slot = Slot(call, Declaration("", 0))
            slot.execution, slot.entry, slot.dispatched, slot.started = execution, entry, dispatched, started
            await tell_auditors(audit, audit_record(view, slot, outcome))
        try:
            await pipeline.enforce_policies(execution, outcome)
        except ResultPolicyError as fault:  # the batch stops at this call: what came before was delivered
            fault.delivered = tuple(delivered)
            raise
        delivered.append(outcome)
        if notifies:
            await pipeline.notify(execution, outcome)
    return BatchOutcomes(delivered, contexts)


async def _admit_and_run(
    pipeline: CallPipeline, execution: ToolExecution, entry: ToolEntry, token: CancellationToken, fresh: dict[str, Any] | None
) -> tuple[ToolExecutionOutcome, bool]:
    """Authorization, re-authorization and the body of a resolved call: its outcome, and whether its body ran."""
    if token.is_cancelled:
        return not_dispatched(execution, token), False
    refusal = await pipeline.authorize(execution, entry)
    if isinstance(refusal, PendingApproval):  # no sink to park it in: fail closed rather than lose the call
        return unparkable(execution), False
    if refusal is not None:
        return refusal, False
    if token.is_cancelled:
        return not_dispatched(execution, token), False
    refusal = await pipeline.reauthorize(execution, entry)
    if refusal is not None:
        return refusal, False
    # Nothing but the caller's token can cancel the body: a cancel scope only when it can.
    return await pipeline.execute(execution, entry, token.can_be_cancelled, "0", None, fresh), True


async def _general(general: Callable[[], BatchRun], observed: ObservedBatch | None = None) -> BatchOutcomes:
    run = general()
    if observed is not None:
        run.observed_from_start(observed)
    outcomes = await run.run()
    assert isinstance(outcomes, BatchOutcomes)  # no sink: nothing can be parked
    return outcomes
