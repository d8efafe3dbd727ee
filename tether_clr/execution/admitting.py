"""Admission and dispatch of one call of a batch, in model order: resolution and the sink's declaration
(:meth:`Admitting._declare`), authorization with parking and resumed decisions (:meth:`Admitting._authorize`),
re-authorization and the body (:meth:`Admitting._dispatch`), with its retries. Floor 4."""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import replace
from functools import partial

from tether_clr.catalog.entries import ToolEntry
from tether_clr.execution.admission import admitted_not_run
from tether_clr.execution.batch_state import BatchState
from tether_clr.execution.children import too_deep
from tether_clr.execution.pool import Pool, Slot, Worker, not_dispatched, unparkable
from tether_clr.execution.ports import told
from tether_clr.execution.resumption import already_approved, withdrawn_outcome
from tether_clr.execution.retries import run_attempts
from tether_clr.foundations.errors import SinkError
from tether_clr.foundations.text import describe_exception
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from tether_clr.records.suspension import PendingApproval

__all__ = ["Admitting"]


class Admitting(BatchState):
    """Declares, authorizes and dispatches the calls of a batch; one call at a time, in model order."""

    def _resolve(self, slot: Slot) -> tuple[ToolCall, ToolEntry | None, ToolExecutionOutcome | None]:
        """Resolve one call (:meth:`begin`): the call as it is declared, its entry and its early outcome, if any."""
        if self._audit:
            slot.started = time.perf_counter()
        declared, execution, entry, slot.fresh, early = self._pipeline.begin(slot.call, self._token, slot.parsed)
        slot.parsed = None  # handed over: begin's fresh object is the body's now
        origin = self._origin
        if origin is not None and origin.depth > self._max_child_depth:  # declared and recorded, never run
            early = too_deep(execution, origin.depth, self._max_child_depth)
        slot.execution = execution
        slot.entry = entry
        if self._observed is not None:
            slot.observed = self._observed.call(execution, entry)
        return declared, entry, early

    async def _declared(self, slot: Slot, declared: ToolCall) -> bool:
        """Declare one resolved call to the sink (not again for a resumed step's); False when the sink failed."""
        if self._resume is not None and slot.declaration.index in self._resume.declared:
            return True
        assert self._sink is not None
        try:
            await told(slot.declaration, self._sink.call_declared, declared)
        except Exception as exc:
            self._abort(SinkError(f"sink failed to record call {declared.call_id!r}: {describe_exception(exc)}"))
            return False
        return True

    def _resolve_only(self, slot: Slot) -> tuple[ToolEntry | None, ToolExecutionOutcome | None]:
        """:meth:`_declare` for a batch with no sink: nothing to tell, no coroutine."""
        _, entry, early = self._resolve(slot)
        return entry, early

    async def _declare(self, slot: Slot) -> tuple[ToolEntry | None, ToolExecutionOutcome | None] | None:
        """Resolve one call and declare it to the sink; None when the sink failed (the batch is aborting).
        Awaits only with a sink: resolution itself never waits."""
        declared, entry, early = self._resolve(slot)
        if self._sink is not None and not await self._declared(slot, declared):
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
                slot.finish(unparkable(execution))
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
        token = self._token
        if token.is_cancelled:
            slot.finish(not_dispatched(execution, token))
            return
        refusal = await self._pipeline.reauthorize(execution, entry)
        if refusal is not None:
            slot.finish(refusal)
            return
        if pool is not None:
            if not pool.in_turn(slot):
                await pool.turn(slot)
                if token.is_cancelled:  # while it waited for an earlier call to start
                    slot.finish(not_dispatched(execution, token))
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
            fresh, slot.fresh = slot.fresh, None  # the body's own object, once
            return self._pipeline.execute(execution, entry, interruptible, key, slot.observed, fresh)
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

