"""A parallel group's machinery: the slots of its calls, the bounded pool, and its workers.

Slots are counted as the bounded pool's were: a call takes one when it is
admitted and gives it back when its body ends, at most ``max_parallelism`` at
once. :mod:`tether_clr.execution.batch` drives them; nothing here runs a stage.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import anyio

from tether_clr.catalog.entries import ToolEntry
from tether_clr.execution.observing import ObservedCall
from tether_clr.execution.ports import Declaration
from tether_clr.foundations.arguments import ParsedArguments
from tether_clr.foundations.cancellation import CancellationToken
from tether_clr.records.outcomes import ToolCall, ToolExecution, ToolExecutionOutcome
from tether_clr.records.outcomes import ToolFailureCodes as Codes
from tether_clr.records.suspension import PendingApproval

__all__ = ["Admitted", "Pool", "Slot", "Worker", "not_dispatched", "unparkable"]


class Slot:
    """One call of a batch on its way through the stages: what each stage found, and the events a parallel
    group's workers and deliverer wait on.

    Made once per call, so only the call and its declaration are set when it is made; every other field
    starts at its class-level default (a plain class: a dataclass's generated ``__init__`` with all of them
    would cost more than most stages of a call).
    """

    execution: ToolExecution | None = None
    entry: ToolEntry | None = None
    outcome: ToolExecutionOutcome | None = None
    dispatched: bool = False
    started: float = 0.0  # perf_counter at admission; only read when auditing
    parsed: ParsedArguments | None = None  # the arguments as classifying read them, unseen by anyone
    fresh: dict[str, Any] | None = None  # the arguments object for its body (begin's), unseen by anyone
    audited: bool = False
    parked: PendingApproval | None = None  # the provider answered DEFERRED: no outcome, no body
    queued: int = -1  # its place among the parallel group's admitted calls, in model order
    attempts: int = 1  # attempts recorded so far (a tool with a retry policy)
    observed: ObservedCall | None = None  # its instrumentation, when the batch is observed
    # Made only when the deliverer has to wait for this slot: an inline call's outcome is
    # already there when it is delivered, and an anyio Event costs a backend lookup.
    _done: anyio.Event | None = None
    # The deliverer took the outcome up (or is gone); see taken_up().
    taken: bool = False
    _taken: anyio.Event | None = None

    def __init__(self, call: ToolCall, declaration: Declaration) -> None:
        self.call = call
        self.declaration = declaration

    def finish(self, outcome: ToolExecutionOutcome) -> None:
        self.outcome = outcome
        if self._done is not None:
            self._done.set()

    def park(self, pending: PendingApproval) -> None:
        self.parked = pending
        if self._done is not None:
            self._done.set()

    @property
    def is_done(self) -> bool:
        return self.outcome is not None or self.parked is not None

    def take_up(self) -> None:
        """The deliverer resumed with this outcome, or stopped delivering: release :meth:`taken_up`."""
        self.taken = True
        if self._taken is not None:
            self._taken.set()

    async def taken_up(self) -> None:
        """Until :meth:`take_up`; returns at once when it already ran."""
        if self.taken:
            return
        if self._taken is None:
            self._taken = anyio.Event()
        await self._taken.wait()

    async def wait(self) -> None:
        """Until :meth:`finish` or :meth:`park`; returns at once, without a checkpoint, when either ran."""
        if self.is_done:
            return
        if self._done is None:
            self._done = anyio.Event()
        await self._done.wait()


def not_dispatched(execution: ToolExecution, token: CancellationToken) -> ToolExecutionOutcome:
    """ABORTED_BEFORE_DISPATCH: the batch's ``token`` was cancelled before this call's body could start."""
    reason = token.reason or "cancellation requested"
    return ToolExecutionOutcome.failed(execution.call_id, execution.name, Codes.ABORTED_BEFORE_DISPATCH, f"not dispatched: {reason}")


def unparkable(execution: ToolExecution) -> ToolExecutionOutcome:
    """UNAVAILABLE ``approval_deferred``: the provider deferred the call, but the batch has no sink that can
    park it (a session store's). Failing closed rather than losing the call."""
    return ToolExecutionOutcome.failed(
        execution.call_id, execution.name, Codes.UNAVAILABLE,
        "approval deferred, but this batch's sink is not a log a parked call can be resumed from: "
        "run the batch with a session store's sink to park it", "approval_deferred",
    )


Admitted = tuple[Slot, ToolExecution, ToolEntry]


class Pool:
    """A parallel group's shared state: its declared calls, admission, and the bodies' slots.

    Slots are counted as the bounded pool's were: a call takes one when it is
    admitted and gives it back when its body ends, at most ``capacity`` at once.
    Admission authorizes the calls in model order while each admitted call got a
    slot, plus one more that waits for a slot (``waiting``); admitted calls queue
    in model order for the workers. One worker admits at a time (``admitting``).
    """

    __slots__ = (
        "declared", "capacity", "next", "in_use", "waiting", "queue", "admitting", "flushed", "done", "_idle",
        "_queued", "_started", "_passed", "_turns",
    )

    def __init__(self, declared: list[tuple[Slot, tuple[ToolEntry | None, ToolExecutionOutcome | None]]], capacity: int) -> None:
        self.declared = declared
        self.capacity = capacity
        self.next = 0  # the next declared call to authorize
        self.in_use = 0  # slots taken: admitted calls whose body has not ended
        self.waiting: Admitted | None = None  # authorized, waiting for a slot
        self.queue: deque[Admitted] = deque()  # admitted, in model order, for the next free worker
        self.admitting = False
        self.flushed = False  # the sink was flushed before the group's first body
        self.done = False  # admission is over: nothing more will be queued
        self._idle: anyio.Event | None = None
        self._queued = 0  # admitted calls so far
        self._started = 0  # admitted calls, from the first, whose body started or that will not run
        self._passed: set[int] = set()  # later ones that are past that point already (refused, cancelled)
        self._turns: dict[int, anyio.Event] = {}

    def enqueue(self, admitted: Admitted) -> None:
        admitted[0].queued = self._queued
        self._queued += 1
        self.queue.append(admitted)

    def in_turn(self, slot: Slot) -> bool:
        """Whether every call admitted before ``slot`` started its body or will not run (no wait: the usual case)."""
        return slot.queued == self._started

    async def turn(self, slot: Slot) -> None:
        """Until every call admitted before ``slot`` started its body or will not run: bodies start in
        model order even when re-authorization (an asynchronous authority) answers out of order."""
        while slot.queued != self._started:
            event = self._turns.get(slot.queued)
            if event is None:
                event = self._turns[slot.queued] = anyio.Event()
            await event.wait()

    def passed(self, slot: Slot) -> None:
        """``slot`` started its body, or will not run: the next admitted call may start (idempotent)."""
        queued = slot.queued
        if queued < self._started:
            return
        if queued == self._started and not self._passed:  # in order, nobody ahead of its turn: the usual case
            self._started += 1
        else:
            self._passed.add(queued)
            while self._started in self._passed:
                self._passed.discard(self._started)
                self._started += 1
        if self._turns:
            event = self._turns.pop(self._started, None)
            if event is not None:
                event.set()

    @property
    def can_admit(self) -> bool:
        """Nobody admits now, and the call waiting for a slot (if any) can have one."""
        return not self.admitting and (self.waiting is None or self.in_use < self.capacity)

    async def idle(self) -> None:
        """Until :meth:`wake`: for a worker with nothing to do now."""
        if self._idle is None:
            self._idle = anyio.Event()
        await self._idle.wait()

    def wake(self) -> None:
        """Calls were queued, a slot came free for the waiting call, or admission ended: idle workers look again."""
        if self._idle is not None:
            self._idle.set()
            self._idle = None


class Worker:
    """A parallel worker's one cancel scope, and the slot whose body runs in it now."""

    __slots__ = ("scope", "running")

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self.running: Slot | None = None

    def interrupt(self) -> None:
        """The batch token's callback: cancel the scope only while a body runs in it."""
        if self.running is not None:
            self.scope.cancel()
