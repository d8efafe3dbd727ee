"""A parallel group of a batch: every call declared before any is authorized, admission in model order
ahead of the bodies while slots are free, at most ``max_parallelism`` bodies at once on at most
``max_parallelism + 1`` worker tasks, and one deliverer task (:mod:`~tether_clr.execution.delivery`). No task,
semaphore or event per call. Floor 4."""

from __future__ import annotations

import anyio
import anyio.abc
import anyio.lowlevel

from tether_clr.catalog.entries import ToolEntry
from tether_clr.execution.delivery import Delivery
from tether_clr.execution.pool import Pool, Slot, Worker, not_dispatched
from tether_clr.records.outcomes import ToolExecutionOutcome

__all__ = ["ParallelGroups"]


class ParallelGroups(Delivery):
    """Runs a group of concurrency-safe calls on the bounded worker pool (:meth:`ParallelGroups._run_parallel`)."""

    async def _run_parallel(self, slots: list[Slot]) -> None:
        """A parallel group: declared together, admitted in model order, bodies on the bounded worker pool."""
        # Every call of the group is declared before any is authorized: one durability point for all.
        declared: list[tuple[Slot, tuple[ToolEntry | None, ToolExecutionOutcome | None]]] = []
        for slot in slots:
            begun = self._resolve_only(slot) if self._sink is None else await self._declare(slot)
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

