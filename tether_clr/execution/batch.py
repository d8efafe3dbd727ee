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

import anyio
import anyio.abc
import anyio.lowlevel

from tether_clr.execution.children import ChildOrigin, ChildSink
from tether_clr.execution.grouping import classify_reading
from tether_clr.execution.inputs import proposal
from tether_clr.execution.observing import ObservedBatch, observe_batch
from tether_clr.execution.parallel import ParallelGroups
from tether_clr.execution.pool import Slot, not_dispatched
from tether_clr.execution.ports import Declaration
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.foundations.errors import BatchAbortedError
from tether_clr.records.contexts import BatchOutcomes
from tether_clr.records.decisions import ToolExecutionMode
from tether_clr.records.outcomes import ToolCall, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.suspension import BatchSuspended

__all__ = ["BatchRun"]


class BatchRun(ParallelGroups):
    """One execution of a model step's calls (see :class:`~tether_clr.execution.batch_state.BatchState` for its
    arguments): groups them, runs each group inline or on the pool, and ends the step."""

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

    def observed_from_start(self, observed: ObservedBatch) -> None:
        """Run observed by ``observed``, the observer :func:`observe_batch` already gave this batch (a lone
        call that found it observed hands it here rather than asking the instrumentation twice)."""
        self._observed = observed

    async def run(self) -> BatchOutcomes | BatchSuspended:
        # A cancelled host task is cancelled here, before anything is declared: its cancel scopes
        # are read, with no event-loop iteration (a batch of instant tools need not yield at all).
        await anyio.lowlevel.checkpoint_if_cancelled()
        hooks = self._hooks
        observed = self._observed = observe_batch(self._instrumentation, self._view) if self._observed is None else self._observed
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

    async def _run_group(self, slots: list[Slot]) -> None:
        if len(slots) == 1:  # nothing can overlap: run the stages inline, no tasks to spawn
            slot = slots[0]
            begun = self._resolve_only(slot) if self._sink is None else await self._declare(slot)
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
        await self._run_parallel(slots)

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

