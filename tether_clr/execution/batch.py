"""Scheduling one model step: grouping, the bounded parallel pool, the model-order
sink, and the cancellation drain.

Calls are split into groups: a run of consecutive PARALLEL calls, or a single
EXCLUSIVE call (a barrier). A group of one runs every stage inline. In a larger group:

* the calls are declared to the sink in model order;
* admission authorizes the calls in model order (pre-execute, approval,
  guards) as the bounded pool always did: each admitted call takes one of
  ``max_parallelism`` slots until its body ends, and admission runs ahead while
  slots are free, plus one call that waits for a slot. It runs in whichever
  worker has nothing queued, one worker at a time; a parked call or an
  infrastructure fault stops it;
* at most ``max_parallelism + 1`` workers take the admitted calls in model order
  and run their bodies, so bodies start in model order and at most
  ``max_parallelism`` run at once, with no task, semaphore or event per call;
* one task walks the calls in model order again, waits for each body, runs the
  post-execute waterfall and the result policies, and only then hands the
  outcome to the sink and the result listeners. The slot of the outcome it is
  at is given back only once the result policies let that outcome through and
  the sink recorded it, so a policy that stops the batch stops it before that
  slot admits anything new.

So bodies overlap, while every stage that decides or records runs in model
order. A group finishes completely before the next one starts.

Every call of a group is declared to the sink before any of them is authorized,
and a sink with the optional hooks (:class:`~tether_clr.execution.ports.SinkHooks`) is flushed
before the group's first body starts and before the delivery waits for a body
still running: a group-committing sink makes a group's declarations one
transaction, and results ready together another.

Layer 4 (execution): it imports the catalog (views, entries), never the
reverse. :meth:`~tether_clr.ToolRegistry.execute_batch` is the public entry: it
checks that the view is its own and runs a :class:`BatchRun` with its listener
snapshot and approval provider; a resumed step runs one from a :class:`ResumePoint`."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from functools import partial
from typing import Any

import anyio
import anyio.abc
import anyio.lowlevel

from tether_clr.catalog.entries import ToolEntry
from tether_clr.catalog.views import SealedToolCatalogView
from tether_clr.execution.admission import admission_only_active, admitted_not_run
from tether_clr.execution.approval_records import ApprovalRecords
from tether_clr.execution.auditing import audit_record, tell_auditors
from tether_clr.execution.children import ChildCalling, ChildOrigin, ChildSink, too_deep
from tether_clr.execution.grants import GrantingApproval
from tether_clr.execution.grouping import Classifier, classify_reading
from tether_clr.execution.hooks import HookSet, RecordingApproval
from tether_clr.execution.inputs import proposal, validate_batch
from tether_clr.execution.instrumentation import Instrumentation
from tether_clr.execution.listeners import ListenerSnapshot
from tether_clr.execution.observing import ObservedBatch, observe_batch
from tether_clr.execution.pipeline import CallPipeline
from tether_clr.execution.pool import Pool, Slot, Worker, not_dispatched
from tether_clr.execution.ports import ApprovalProvider, Declaration, ToolCallSink, told
from tether_clr.execution.resumption import ResumePoint, already_approved, withdrawn_outcome
from tether_clr.execution.retries import run_attempts
from tether_clr.execution.timeouts import Timeouts
from tether_clr.foundations.cancellation import CancellationSource, CancellationToken
from tether_clr.foundations.errors import BatchAbortedError, ResultPolicyError, SinkError
from tether_clr.foundations.text import describe_exception
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.decisions import ToolExecutionMode
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.suspension import BatchSuspended, PendingApproval

__all__ = ["BatchRun"]

logger = logging.getLogger("tether_clr")


class BatchRun:
    """One execution of a model step's calls; validates its inputs before anything runs.

    ``listeners`` and ``approval`` are the registry's when the batch starts;
    ``classify`` replaces the built-in grouping (a registry subclass's
    ``classify``); ``resume`` continues a suspended step; ``timeouts``: the registry's. Bodies may make child
    calls (:mod:`tether_clr.execution.children`) up to ``max_child_depth`` deep;
    ``origin`` is set for a child's own one-call run. ``instrumentation``: the registry's
    (:mod:`tether_clr.execution.instrumentation`), asked once when the batch runs.
    """

    def __init__(
        self,
        calls: list[ToolCall],
        view: SealedToolCatalogView,
        listeners: ListenerSnapshot,
        approval: ApprovalProvider | None,
        max_parallelism: int,
        sink: ToolCallSink | None,
        cancellation: CancellationToken | None,
        resume: ResumePoint | None = None,
        classify: Classifier | None = None,
        timeouts: Timeouts | None = None,
        *,
        max_child_depth: int = 4,
        origin: ChildOrigin | None = None,
        instrumentation: Instrumentation | None = None,
    ) -> None:
        validate_batch(calls, view, max_parallelism)
        self._listeners, self._provider, self._max_child_depth, self._origin = listeners, approval, max_child_depth, origin
        self._timeouts, self._instrumentation = timeouts, instrumentation
        self._observed: ObservedBatch | None = None  # set when the batch runs, if something records
        self._classify = classify
        self._calls = calls
        self._view = view
        self._sink = sink
        self._hooks = HookSet.of(sink)
        self._records = ApprovalRecords(self._hooks, self._abort)
        self._admission_only = admission_only_active()
        if self._admission_only:  # a question about the calls, not their execution: nothing to trace or count
            self._instrumentation = None
        self._resume = resume
        if approval is not None and self._hooks is not None and (self._hooks.asked or self._hooks.decided):
            approval = RecordingApproval(approval, self._hooks, self._records.record)
        if approval is not None and self._hooks is not None and self._hooks.holds_grants:  # "always" answers are remembered
            approval = GrantingApproval(approval, self._hooks, self._records.record)
        # A parked call must be findable later: only a sink that records approvals can hold it.
        self._can_park = self._hooks is not None and self._hooks.parks_approvals
        self._parked: list[PendingApproval] = []
        self._flushes = self._hooks is not None and self._hooks.flushes
        self._committing = False  # a commit runs behind the delivery
        depth = 0 if origin is None else origin.depth
        self._pipeline = CallPipeline(view, listeners, approval, timeouts, ChildCalling(self._run_child, depth))
        self._max_parallelism = max_parallelism
        # Parallel workers link their bodies to the batch token with one scope each, unless an
        # execute listener may hand a body another token (then each body links its own).
        self._worker_scopes = not self._pipeline.swaps_cancellation
        # One token for the whole batch: the caller's cancellation, or an infrastructure fault.
        self._source = CancellationSource(*([cancellation] if cancellation is not None else []))
        self._caller_can_cancel = cancellation is not None and cancellation.can_be_cancelled
        self._fault: BatchAbortedError | None = None
        # What the step delivered so far: a resumed step's earlier outcomes first.
        self._delivered: list[ToolExecutionOutcome] = [] if resume is None else list(resume.prior)
        self._contexts: list[str] = [] if resume is None else list(resume.prior_contexts)  # FIFO, model order
        self._deliver_scope: anyio.CancelScope | None = None
        self._delivering: Slot | None = None  # the slot the deliverer is at, in a parallel group
        # Audit machinery only when someone listens: otherwise no clocks, no records.
        self._audit: tuple[Callable[..., Any], ...] = self._pipeline.audit_listeners()
        self._batch_id = uuid.uuid4().hex

    @property
    def _token(self) -> CancellationToken:
        return self._source.token

    def _groups(self) -> list[list[Slot]]:
        groups: list[list[Slot]] = []
        parallel: list[Slot] = []
        view, classify = self._view, self._classify
        # The built-in classifier hands back the arguments it read when no predicate saw them
        # (a constant one), and begin() then does not read them again; a replacement is asked as is.
        offset = 0 if self._resume is None else self._resume.offset
        for index, call in enumerate(self._calls, offset):
            slot = Slot(call, Declaration(self._batch_id, index, None if self._origin is None else self._origin.key))
            if classify is None:
                mode, slot.parsed = classify_reading(call, view)
            else:
                try:
                    mode = classify(call, view)
                except Exception:  # a subclass's classifier that raises fails closed: the call runs alone
                    mode = ToolExecutionMode.EXCLUSIVE
            if mode is ToolExecutionMode.PARALLEL:
                parallel.append(slot)
                continue
            if parallel:
                groups.append(parallel)
                parallel = []
            groups.append([slot])
        if parallel:
            groups.append(parallel)
        return groups

    async def run(self) -> BatchOutcomes | BatchSuspended:
        # One checkpoint per batch: a batch of instant tools (whose inline groups never wait)
        # still yields to the loop once, and a cancelled host task is cancelled here, before
        # anything is declared.
        await anyio.lowlevel.checkpoint()
        hooks = self._hooks
        observed = self._observed = observe_batch(self._instrumentation, self._view)
        error: BaseException | None = None
        starting = hooks is not None and self._resume is None  # a resumed step was started long ago
        groups = self._groups() if starting and hooks is not None and hooks.starts else None
        if starting and hooks is not None:  # raises SinkError before anything ran; refused arguments bounded (inputs.py)
            await hooks.batch_started(self._calls if groups is None else proposal(groups, self._view.argument_limits))
        try:
            groups = self._groups() if groups is None else groups
            for group in groups:
                await self._run_group(group)
                if self._fault is not None:
                    if self._audit:  # calls that reached an outcome but were not delivered are audited too
                        for slot in (slot for g in groups for slot in g):
                            if slot.outcome is not None and not slot.audited:
                                await self._audit_call(slot, slot.outcome)
                    raise self._fault
                if self._parked:  # no later call of the step is admitted
                    break
            if hooks is not None:
                with anyio.CancelScope(shield=True):
                    await hooks.batch_finished()
                hooks = None
            if self._parked:
                return BatchSuspended(tuple(self._delivered), tuple(self._parked), tuple(self._contexts))
            return BatchOutcomes(self._delivered, self._contexts)
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._source.close()
            if observed is not None:  # the calls that were not delivered: parked, or stopped by ``error``
                observed.finished(error)
            if hooks is not None:  # the batch is raising: tell the sink, without hiding why
                await hooks.aborted()

    async def _flush(self) -> bool:
        """A durability point; False when the sink failed (the batch is aborting)."""
        if self._hooks is None or not self._hooks.flushes:
            return True
        try:
            await self._hooks.flush()
        except SinkError as fault:
            self._abort(fault)
            return False
        return True

    def _abort(self, fault: BatchAbortedError) -> None:
        if self._fault is None:
            fault.delivered = tuple(self._delivered)
            self._fault = fault
        self._source.cancel(f"batch aborted: {fault}")
        if self._deliver_scope is not None:
            self._deliver_scope.cancel()

    async def _run_group(self, slots: list[Slot]) -> None:
        if len(slots) == 1:  # nothing can overlap: run the stages inline, no tasks to spawn
            slot = slots[0]
            begun = await self._declare(slot)
            target = None if begun is None else await self._authorize(slot, *begun)
            if target is not None:
                if await self._flush():
                    # Inline, nothing but the caller's token can cancel the batch token while the
                    # body runs (_abort only runs from delivery, later): no token, no cancel scope.
                    await self._dispatch(slot, *target, interruptible=self._caller_can_cancel)
                else:
                    slot.finish(not_dispatched(target[0], self._token))
            # Delivered inline, with no cancel scope: the outcome is already there, so the
            # deliverer never waits, and only its own faults (which return at once) abort.
            if self._fault is None:
                await self._deliver_in_order(slots, None)
            return
        # Every call of the group is declared before any is authorized: one durability point for all.
        declared: list[tuple[Slot, tuple[ToolEntry | None, ToolExecutionOutcome | None]]] = []
        for slot in slots:
            begun = await self._declare(slot)
            if begun is None:
                break
            declared.append((slot, begun))
        pool = Pool(declared, self._max_parallelism)
        self._delivering = slots[0]  # where the deliverer starts, even before its task first runs
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._deliver, slots, tg)
            # Workers run admitted calls' bodies one at a time (at most max_parallelism bodies at once,
            # by the slots), and admit (one worker at a time) when nothing is queued: no task, pool slot
            # or event per call. One worker more than bodies, so a queued body never waits for an
            # admission that awaits (an approval, a listener), as a separate admission task would not.
            for _ in range(min(self._max_parallelism + 1, len(declared))):
                tg.start_soon(self._work, pool)

    async def _work(self, pool: Pool) -> None:
        """One worker of a parallel group, until admission is over and nothing is queued.

        When every body runs on the batch token itself (no execute listener can hand
        one another token), one cancel scope serves all the bodies this worker runs:
        the token cancels it only while a body runs, and the worker leaves it right
        after an interrupted body, before anything else can await inside it; an
        interrupted body is ABORTED exactly as a body with its own linked scope.
        Once the token is cancelled no body starts again, so the rest needs no scope.
        """
        if self._worker_scopes:
            worker = Worker()
            with self._token.register(worker.interrupt), worker.scope:
                await self._work_until(pool, worker)
            interrupted = worker.running
            if interrupted is not None:  # its body was cancelled: it never reached an outcome
                assert interrupted.execution is not None
                interrupted.finish(self._pipeline.cancelled(interrupted.execution))
                pool.in_use -= 1
        await self._work_until(pool, None)

    async def _work_until(self, pool: Pool, worker: Worker | None) -> None:
        """Run queued bodies, admit, or wait, until there is nothing left to do, or (with
        ``worker``) right after a body its scope was cancelled for, before anything else awaits."""
        queue = pool.queue
        while True:
            if queue:
                slot, execution, entry = queue.popleft()
                try:
                    await self._dispatch(slot, execution, entry, worker=worker, pool=pool)
                finally:
                    pool.passed(slot)  # idempotent: a body that started passed already
                if worker is not None and worker.scope.cancel_called:
                    if worker.running is None:  # the body returned all the same: its slot is free
                        pool.in_use -= 1
                    return
                if self._delivering is slot:
                    # The delivery has nothing earlier to deliver: let it take this outcome up (review,
                    # result policies) before the slot is given back, so a policy that stops the batch
                    # stops it before anything new is dispatched.
                    await slot.taken_up()
                pool.in_use -= 1
                if pool.waiting is not None and not pool.admitting:
                    pool.wake()  # the call waiting for a slot can have this one
            elif pool.done:
                return
            elif pool.can_admit:
                await self._admit(pool)
            else:
                await pool.idle()

    async def _admit(self, pool: Pool) -> None:
        """The admission loop of a parallel group, run by a worker with nothing queued; one at a time.

        In model order: gives the call waiting for a slot its slot and queues it
        (the group's first only after the sink's flush), then authorizes the next
        call (pre-execute, approval, guards); stops when the waiting call finds no
        free slot (a body that ends gives one back and admits again), and ends
        admission when the calls run out, an infrastructure fault stops the
        batch, or a call is parked.
        """
        pool.admitting = True
        try:
            declared = pool.declared
            while True:
                waiting = pool.waiting
                if waiting is not None:
                    if pool.in_use >= pool.capacity:
                        return
                    pool.waiting = None
                    if self._fault is None and not pool.flushed:  # durable before the group's first body starts
                        pool.flushed = True
                        if not await self._flush():
                            waiting[0].finish(not_dispatched(waiting[1], self._token))
                    if self._fault is not None:  # an infrastructure fault: it is not dispatched
                        if not waiting[0].is_done:
                            waiting[0].finish(not_dispatched(waiting[1], self._token))
                    else:
                        pool.in_use += 1
                        pool.enqueue(waiting)
                        pool.wake()  # an idle worker starts it, even while this one goes on admitting
                if self._fault is not None or self._parked or pool.next >= len(declared):
                    pool.done = True  # a fault, or a parked call, stops admission
                    return
                slot, begun = declared[pool.next]
                pool.next += 1
                target = await self._authorize(slot, *begun)
                if target is not None:
                    pool.waiting = (slot, *target)
        finally:
            pool.admitting = False
            pool.wake()

    async def _declare(self, slot: Slot) -> tuple[ToolEntry | None, ToolExecutionOutcome | None] | None:
        """Resolve one call and declare it to the sink; None when the sink failed (the batch is aborting)."""
        if self._audit:
            slot.started = time.perf_counter()
        declared, execution, entry, early = self._pipeline.begin(slot.call, self._token, slot.parsed)
        origin = self._origin
        if origin is not None and origin.depth > self._max_child_depth:  # declared and recorded, never run
            early = too_deep(execution, origin.depth, self._max_child_depth)
        slot.execution = execution
        slot.entry = entry
        if self._observed is not None:
            slot.observed = self._observed.call(execution, entry)
        if self._sink is not None and (self._resume is None or slot.declaration.index not in self._resume.declared):
            try:
                await told(slot.declaration, self._sink.call_declared, declared)
            except Exception as exc:
                self._abort(SinkError(f"sink failed to record call {declared.call_id!r}: {describe_exception(exc)}"))
                return None
        return entry, early

    async def _authorize(
        self, slot: Slot, entry: ToolEntry | None, early: ToolExecutionOutcome | None
    ) -> tuple[ToolExecution, ToolEntry] | None:
        """Authorize one declared call, in model order; returns what to dispatch, if anything."""
        token = self._token
        execution = slot.execution
        assert execution is not None
        if token.is_cancelled:
            if slot.observed is not None:  # cancelled before its first admission stage
                slot.observed.stage = "pre_execute"
            slot.finish(not_dispatched(execution, token))
            return None
        self._records.authorizing = slot.declaration
        resume = self._resume
        decision = None if resume is None else resume.decided.get(slot.declaration.index)
        if decision is not None and not await self._records.resumed_decision(slot, execution, decision, self._token):
            return None
        if resume is not None and slot.declaration.index in resume.withdrawn:
            slot.finish(withdrawn_outcome(execution))
            return None
        if early is not None:
            slot.finish(early)
            return None
        assert entry is not None
        refusal = await self._pipeline.authorize(execution, entry, None if decision is None else already_approved, slot.observed)
        if refusal is None:
            if self._admission_only:  # asked whether it would run, not to run it
                slot.finish(admitted_not_run(execution))
                return None
            return execution, entry
        if isinstance(refusal, PendingApproval):
            if not self._can_park:  # nowhere durable to park it: fail closed rather than lose the call
                slot.finish(ToolExecutionOutcome.failed(
                    execution.call_id, execution.name, Codes.UNAVAILABLE,
                    "approval deferred, but this batch's sink is not a log a parked call can be resumed from: "
                    "run the batch with a session store's sink to park it", "approval_deferred",
                ))
                return None
            pending = replace(refusal, index=slot.declaration.index)
            self._parked.append(pending)
            slot.park(pending)
            return None
        slot.finish(refusal)
        return None

    async def _dispatch(
        self, slot: Slot, execution: ToolExecution, entry: ToolEntry, interruptible: bool = True,
        worker: Worker | None = None, pool: Pool | None = None,
    ) -> None:
        """Re-authorize and run one admitted call; ``worker``: its cancel scope links the body to the token;
        ``pool``: the parallel group's, whose bodies start in model order."""
        if slot.observed is not None:
            slot.observed.stage = "authorization"
        if self._token.is_cancelled:
            slot.finish(not_dispatched(execution, self._token))
            return
        refusal = await self._pipeline.reauthorize(execution, entry)
        if refusal is not None:
            slot.finish(refusal)
            return
        if pool is not None:
            await pool.turn(slot)
            if self._token.is_cancelled:  # while it waited for an earlier call to start
                slot.finish(not_dispatched(execution, self._token))
                return
            pool.passed(slot)
        slot.dispatched = True
        key = slot.declaration.child or str(slot.declaration.index)
        if worker is None:
            slot.finish(await self._execute(slot, execution, entry, interruptible, key))
            return
        worker.running = slot
        outcome = await self._execute(slot, execution, entry, False, key)
        worker.running = None
        slot.finish(outcome)

    def _execute(
        self, slot: Slot, execution: ToolExecution, entry: ToolEntry, interruptible: bool, key: str
    ) -> Awaitable[ToolExecutionOutcome]:
        """The execute stage (no coroutine of its own); once per attempt for a tool with a retry policy (execution/retries.py)."""
        if entry.retry is None:
            return self._pipeline.execute(execution, entry, interruptible, key, slot.observed)
        return run_attempts(
            self._pipeline, execution, entry, interruptible, key, partial(self._attempted, slot, execution),
            partial(setattr, slot, "attempts"), slot.observed,
        )

    async def _attempted(self, slot: Slot, execution: ToolExecution, attempt: int, outcome: ToolExecutionOutcome, again: bool) -> bool:
        """Tell the sink about an attempt (durable before the next one starts); False when it failed."""
        try:
            if self._hooks is not None:
                await self._hooks.attempt_ended(slot.declaration, execution, attempt, outcome)
        except SinkError as fault:
            self._abort(fault)
            return False
        return not again or await self._flush()

    async def _deliver(self, slots: list[Slot], behind: anyio.abc.TaskGroup | None = None) -> None:
        """A parallel group's deliverer task: :meth:`_deliver_in_order` in a scope ``_abort`` can cancel."""
        try:
            with anyio.CancelScope() as scope:
                self._deliver_scope = scope
                if self._fault is not None:  # the admit loop failed before this task first ran
                    return
                await self._deliver_in_order(slots, behind)
        finally:
            self._deliver_scope = None
            for slot in slots:  # a worker waiting for the delivery to take its outcome up goes on
                slot.take_up()

    async def _flush_behind(self) -> None:
        try:
            await anyio.sleep(0)  # let the bodies that can finish now do so: their results join this commit
            await self._flush()
        finally:
            self._committing = False

    async def _deliver_in_order(self, slots: list[Slot], behind: anyio.abc.TaskGroup | None) -> None:
        """Post-execute, policies, sink and listeners, strictly in model order."""
        for slot in slots:
            self._delivering = slot
            if not slot.is_done:
                # About to wait for a body still running: the results ready so far become durable
                # together, in a commit that runs behind the delivery (one at a time) instead of stalling it.
                if behind is not None and self._flushes and not self._committing:
                    self._committing = True
                    behind.start_soon(self._flush_behind)
                await slot.wait()
            if slot.parked is not None:  # the step is suspended here: nothing after it is delivered
                return
            execution, outcome, observed = slot.execution, slot.outcome, slot.observed
            assert execution is not None and outcome is not None
            contexts: tuple[str, ...] = ()
            if slot.dispatched:
                outcome, contexts = await self._pipeline.review(execution, outcome)
                if self._origin is not None:  # a child call adds no context
                    contexts = ()
            outcome = self._pipeline.finalize(execution, slot.entry, outcome).with_attempts(slot.attempts)
            if observed is not None:
                observed.settled(slot.outcome, outcome)
            if self._audit:
                await self._audit_call(slot, outcome)
            try:
                await self._pipeline.enforce_policies(execution, outcome)
            except ResultPolicyError as fault:
                if observed is not None:  # no outcome: the policy's own exception ends the call
                    observed.ended(None, fault.__cause__ or fault, "policy")
                self._abort(fault)
                return
            if self._sink is not None:
                try:
                    if contexts and self._hooks is not None and self._hooks.contexts is not None:
                        await told(slot.declaration, self._hooks.contexts, contexts)
                    await told(slot.declaration, self._sink.outcome_ready, outcome)
                except Exception as exc:
                    self._abort(SinkError(f"sink failed to record the outcome of {outcome.call_id!r}: {describe_exception(exc)}"))
                    return
            # Taken up only now: the worker that ran this body admits again only after the result
            # policies (even awaiting ones) let the outcome through and the sink recorded it.
            slot.take_up()
            if observed is not None:
                observed.ended(outcome)
            self._delivered.append(outcome)
            self._contexts.extend(contexts)
            await self._pipeline.notify(execution, outcome)

    async def _run_child(self, call: ToolCall, origin: ChildOrigin, token: CancellationToken) -> ToolExecutionOutcome:
        """One child call of a body of this run, as its own one-call run; a fault there stops this run too."""
        sink = None if self._sink is None else ChildSink(self._sink)
        child = BatchRun([call], self._view, self._listeners, self._provider, 1, sink, token, None, None, self._timeouts,
                         max_child_depth=self._max_child_depth, origin=origin, instrumentation=self._instrumentation)
        try:
            outcomes = await child.run()
        except BatchAbortedError as fault:
            self._abort(fault)
            return ToolExecutionOutcome.failed(call.call_id, call.name, Codes.ABORTED, f"the batch was aborted: {fault}")
        assert isinstance(outcomes, list) and len(outcomes) == 1  # a child's sink never parks a call
        return outcomes[0]

    async def _audit_call(self, slot: Slot, outcome: ToolExecutionOutcome) -> None:
        """One :class:`ToolAuditRecord` per call, to every audit listener; their failures are contained."""
        slot.audited = True
        await tell_auditors(self._audit, audit_record(self._view, slot, outcome))
